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
