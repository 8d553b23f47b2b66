"""The generated files (components/spec/args.py, docs/library.md's argument reference) are what `make generate`
writes from the declarations today, and say what the declarations say."""

import typing

from scripts import generate

import ray_tpu_gke
from ray_tpu_gke.spec import args


def test_generated_files_are_current():
    stale = [str(path.relative_to(generate.ROOT)) for path, text in generate.outputs().items()
             if path.read_text() != text]
    assert not stale, f"stale: {', '.join(stale)}; run `make generate`"


def test_every_declared_field_is_a_typed_dict_key_with_its_docstring():
    for name, model in generate.declarations().items():
        typed = getattr(args, name)
        assert typing.is_typeddict(typed), name
        assert list(typed.__annotations__) == list(model.model_fields), name
        required = {f for f, info in model.model_fields.items() if info.is_required()}
        assert typed.__required_keys__ == required, name


def test_the_declarations_carry_a_docstring_for_every_key():
    undocumented = sorted(f"{name}.{field}" for name, model in generate.declarations().items()
                          for field in model.model_fields if not generate.attribute_docs(model).get(field))
    assert not undocumented, undocumented


def test_the_reference_lists_every_key():
    text = generate.LIBRARY_DOC.read_text()
    section = text[text.index(generate.DOC_BEGIN):text.index(generate.DOC_END)]
    for name, model in generate.declarations().items():
        assert f"#### `{name}`" in section
        for field in model.model_fields:
            assert f"| `{field}` |" in section, f"{name}.{field}"


def test_public_argument_names_are_generated():
    """The public API's argument types are the generated ones (components/__init__.py re-exports them)."""
    public = [n for n in ray_tpu_gke.__all__ if n.endswith("Args")]
    assert public and all(getattr(ray_tpu_gke, n) is getattr(args, n) for n in public)


def test_the_configuration_reference_lists_every_stack_key_in_camel_case():
    """docs/configuration.md has a section per key path of a stack file and a row per key, spelt as a stack file
    spells it (a key the README's hand-written table once missed, `rayJobs[].suspend`, included)."""
    from scripts import configuration

    text = generate.CONFIGURATION_DOC.read_text()
    paths = [path for path, _ in configuration.sections()]
    assert {"ray-tpu-gke:cluster", "ray-tpu-gke:tpuSlices[]", "ray-tpu-gke:rayClusters[].workerGroups[]",
            "ray-tpu-gke:rayJobs[]", "ray-tpu-gke:monitoring"} <= set(paths)
    for path, model in configuration.sections():
        body = text[text.index(f"## `{path}`\n"):]
        body = body[:body.find("\n## ", 1) if "\n## " in body[1:] else len(body)]
        for name, field in model.model_fields.items():
            key = field.alias or name
            assert f"| `{key}` |" in body, f"{path}.{key}"
            assert "_" not in key, f"{path}.{key} is not camelCase"
    assert "| `suspend` |" in text[text.index("## `ray-tpu-gke:rayJobs[]`"):]


def test_the_configuration_reference_states_each_rule_a_key_must_pass():
    """A constraint, a checked type and a validator's message each reach the key they apply to."""
    text = generate.CONFIGURATION_DOC.read_text()
    system_pool = text[text.index("## `ray-tpu-gke:cluster.systemPool`"):]
    assert "| `minNodes` | integer | `1` | ≥ 0; ≤ 1000 |" in system_pool
    assert "must be a DNS label of at most 40 characters" in text  # the Name type's check
    assert "must be a /28 range" in text  # ClusterConfig.network's master_cidr validator
