"""components/resources/outputs.py: the cheaper outputs hold what `Output.from_input` and `Output.all` would, value,
knownness, secrecy and dependencies alike, for the inputs the components hand them."""

import asyncio

import pulumi
import pytest
from pulumi.output import UNKNOWN
from ray_tpu_gke.resources import outputs


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


def resolved(loop, value):
    future = loop.create_future()
    future.set_result(value)
    return future


def output(loop, value, resources=(), known=True, secret=False):
    """An output as a resource's would be: its value, the resources it comes from, known or not, secret or not."""
    return pulumi.Output(set(resources), resolved(loop, value), resolved(loop, known), resolved(loop, secret))


def state(loop, out):
    async def read():
        return (await out.future(with_unknowns=True), await out.resources(), await out.is_known(),
                await out.is_secret())
    return loop.run_until_complete(read())


def test_known_is_from_input_of_a_plain_dict(loop):
    selector = {"cloud.google.com/gke-tpu-topology": "2x4", "ray-tpu-gke/slice": "train"}
    assert state(loop, outputs.known(selector)) == state(loop, pulumi.Output.from_input(selector)) \
        == (selector, set(), True, False)


def test_as_output_keeps_an_output_and_wraps_a_value(loop):
    email = output(loop, "nodes@p.iam.gserviceaccount.com", resources=["account"])
    assert outputs.as_output(email) is email
    assert state(loop, outputs.as_output("cluster-a")) == ("cluster-a", set(), True, False)


@pytest.mark.parametrize("known, secret", [(True, False), (False, False), (True, True)])
def test_gathered_is_output_all(loop, known, secret):
    ids = [output(loop, "policy-1", resources=["p1"]),
           output(loop, "policy-2", resources=["p2", "shared"], known=known, secret=secret),
           output(loop, "policy-3", resources=["shared"])]
    gathered = state(loop, outputs.gathered(ids))
    assert gathered == state(loop, pulumi.Output.all(*ids))
    second = "policy-2" if known else UNKNOWN  # a preview's unknown output reads as UNKNOWN in the list
    assert gathered == (["policy-1", second, "policy-3"], {"p1", "p2", "shared"}, known, secret)


def test_gathered_of_nothing_is_an_empty_list(loop):
    assert state(loop, outputs.gathered([])) == ([], set(), True, False)


def test_gathered_raises_what_an_output_raises(loop):
    failed = loop.create_future()
    failed.set_exception(RuntimeError("the policy was refused"))
    ids = [output(loop, "policy-1"), pulumi.Output(set(), failed, resolved(loop, True), resolved(loop, False))]
    with pytest.raises(RuntimeError, match="the policy was refused"):
        state(loop, outputs.gathered(ids))
