"""Deploy-time checks of facts that change and cannot be known offline: what GKE's release channel creates, and the
project's TPU and GPU quota. Each returns an Output that the resources it guards take as an input, so a failed check
stops `pulumi up` before they are created, with a message that says what to do.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_gcp as gcp

from .. import admission


class PreflightError(pulumi.RunError):
    """A deploy-time check failed; the message says what the project has and what the stack needs. A RunError, which
    the Pulumi SDK reports as its message alone, with no traceback (pulumi 3.x sdk/python/lib/pulumi/errors.py:
    "a clean exit rather than the usual verbose unhandled error logic")."""


def version_prefix(pin: str | None) -> str | None:
    """What to ask `get_engine_versions` for: a minor pin with a trailing dot (so 1.3 never matches 1.34, as the
    provider's `version_prefix` docs advise), an exact pin as itself, nothing without a pin."""
    if pin is None:
        return None
    return f"{pin}." if admission.is_minor_alias(pin) else pin


def channel_version(
    location: str,
    channel: str,
    pin: str | None,
    defaults: Optional[Mapping[str, str]],
    channel_latest: Optional[Mapping[str, str]],
    valid: Optional[Sequence[str]],
) -> Optional[str]:
    """The version GKE creates for a cluster in `channel` with `pin`, from one `get_engine_versions` answer asked
    with `version_prefix(pin)`; `PreflightError` where the channel cannot create it.

    terraform-provider-google `data_source_google_container_engine_versions.go` fills `release_channel_default_version`
    with each channel's default (the prefix not applied), `release_channel_latest_version` with each channel's first
    (newest) `validVersions` entry that has the prefix (the key is absent when it has none) and `valid_master_versions`
    with every valid version that has it. GKE resolves a minor alias to the newest patch valid for the cluster, and a
    cluster in a release channel is valid only on its channel's versions (GKE API `Cluster.initial_cluster_version`,
    `ServerConfig.ReleaseChannelConfig.valid_versions`), so a pin is judged by the channel's versions, never by the
    newest of any channel.
    """
    defaults, channel_latest = dict(defaults or {}), dict(channel_latest or {})
    default = defaults.get(channel)
    if pin is None:
        return default
    offered = channel_latest.get(channel)
    if admission.is_minor_alias(pin):
        if offered is None:
            raise PreflightError(
                f"minMasterVersion {pin}: GKE's {channel} channel in {location} offers no {pin} version (its default "
                f"is {default or 'unknown'}); pin a minor the channel offers, leave minMasterVersion unset or choose "
                "another release channel"
            )
        return offered
    if valid is not None and pin not in valid:
        raise PreflightError(
            f"GKE no longer offers {pin} in {location}; pin a minor such as "
            f"{'.'.join(pin.split('.')[:2])} or leave minMasterVersion unset"
        )
    if offered != pin:
        raise PreflightError(
            f"minMasterVersion {pin} is not a version of GKE's {channel} channel in {location} (its "
            f"default is {default or 'unknown'}); pin a version of that channel, a minor such as "
            f"{'.'.join(pin.split('.')[:2])}, or choose the channel that offers it"
        )
    return pin


def gke_version(
    project: str, location: str, channel: str, pin: str | None, need: admission.VersionNeed
) -> pulumi.Output[str]:
    """The release channel's name, once the version GKE would create in it is at least what the stack needs: the
    channel's default when nothing is pinned, the newest patch of a minor alias the channel offers, or an exact pin
    of the channel."""
    versions = gcp.container.get_engine_versions_output(
        project=project, location=location, version_prefix=version_prefix(pin)
    )

    def check(args) -> str:
        defaults, channel_latest, valid = args
        created = channel_version(location, channel, pin, defaults, channel_latest, valid)
        what = (
            f"GKE's {channel} channel in {location} creates"
            if pin is None
            else f"minMasterVersion {pin} resolves in GKE's {channel} channel in {location} to"
        )
        if created and not admission.version_satisfies(created, need.version):
            minor = ".".join(need.version.split(".")[:2])
            raise PreflightError(
                f"{what} {created}, older than {need.version} that {need.reason} needs; pin "
                f"cluster.minMasterVersion to {minor} (or later) or choose a faster channel"
            )
        return channel

    return pulumi.Output.all(
        versions.release_channel_default_version,
        versions.release_channel_latest_version,
        versions.valid_master_versions,
    ).apply(check)


def accelerator_quota(project: str, needs: list[admission.QuotaNeed], gate: pulumi.Input[str]) -> pulumi.Output[str]:
    """`gate` (e.g. the cluster name) once the project's TPU and GPU quota covers every need; shortfalls stop the
    deploy. A region on its quota's default, -1 (unlimited) and the tpu_family/gpu_family dimensions are read as
    Cloud Quotas defines them (`admission.quota_value`)."""
    if not needs:
        return pulumi.Output.from_input(gate)
    infos = gcp.cloudquota.get_s_quota_infos_output(parent=f"projects/{project}", service="compute.googleapis.com")

    def check(args):
        quota_infos, value = args
        errors, warnings = admission.check_quota(needs, quota_infos or [])
        for warning in warnings:
            pulumi.log.warn(warning)
        if errors:
            raise PreflightError("; ".join(errors))
        return value

    return pulumi.Output.all(infos.quota_infos, gate).apply(check)
