"""The documented examples are what the code renders (docs/ray-objects.md)."""

import re
import subprocess
from pathlib import Path

import yaml
from helpers import ROOT

from ray_tpu_gke.render import manifests
from ray_tpu_gke.resources.identity import RAY_KSA
from ray_tpu_gke.spec.config import parse_stack_config


def examples():
    text = (ROOT / "docs/ray-objects.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert len(blocks) == 8, "four examples, each a stack file and its manifest"
    return [(yaml.safe_load(blocks[i]), yaml.safe_load(blocks[i + 1])) for i in range(0, len(blocks), 2)]


def rendered(stack_file: dict) -> dict:
    config = parse_stack_config(stack_file["config"], "dev")
    (obj,) = config.ray_objects
    return manifests.ray_manifest(obj, config.targets, manifests.render_context(config, RAY_KSA))


def test_each_documented_manifest_is_what_its_config_renders(request):
    if request.config.getoption("--update-snapshots"):  # `make snapshots` rewrites each manifest from its config
        path = ROOT / "docs/ray-objects.md"
        text = path.read_text()
        blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
        for i in range(0, len(blocks), 2):
            manifest = yaml.safe_dump(rendered(yaml.safe_load(blocks[i])), sort_keys=False, width=120)
            text = text.replace(f"```yaml\n{blocks[i + 1]}```", f"```yaml\n{manifest}```", 1)
        path.write_text(text)
    kinds = []
    for stack_file, documented in examples():
        assert rendered(stack_file) == documented
        kinds.append(documented["kind"])
    assert kinds == ["RayCluster", "RayService", "RayJob", "RayService"]


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", readme):
        assert (ROOT / target).exists(), target


def _ignored(path: Path) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", str(path.resolve())], cwd=ROOT).returncode == 0


def test_the_docs_stand_on_their_own():
    """No page of the repository's docs points at a file outside the checkout (a user has only the repository): no
    relative link leaves it, and no text names a path above it such as ../shared."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(((?!https?:|mailto:)[^)#\s]+)", text):
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), f"{page.name} links {target}, outside the repository"
        outside = re.findall(r"(?<![\w/.])\.\./(?:\.\./)*[\w.-]+", text)  # not an ellipsis (.../x)
        # A path is the repository's when it names, from the page's folder, a file of it or one its build makes
        # (`../.venv`: ignored by git, there once `make` ran).
        outside = [o for o in outside if not ((page.parent / o).resolve().is_relative_to(ROOT)
                                              and ((page.parent / o).exists() or _ignored(page.parent / o)))]
        assert not outside, f"{page.name} names {outside}, outside the repository"


def test_the_maintenance_policy_is_not_said_to_keep_slices_whole_through_host_maintenance():
    """GKE's windows and exclusions govern GKE's upgrades, not Compute Engine's host maintenance: the docs say both."""
    from ray_tpu_gke.render import upgrades

    for text in (upgrades.__doc__, (ROOT / "docs/operations.md").read_text()):
        flat = " ".join(text.split())
        assert "keeps a running slice whole" not in flat
        assert "Compute Engine" in flat and "host maintenance" in flat
        assert "including Compute Engine" in flat  # GKE's own words on what the policy does not govern


# Words of a work log: who built the package, in which sitting, and who else used the machine. A page of docs/ or the
# README speaks of the product (what it does, what is measured and how to reproduce it), not of how it was built.
WORK_LOG = (
    r"\bthis session\b",
    r"\bthese sessions\b",
    r"\bother sessions\b",
    r"\ba session of\b",
    r"\bthe integrator\b",
    r"\bintegrator's\b",
    r"\bhelpers?\b(?! (?:function|module|script|`))",  # who worked on it; not a code helper (`the helper `x``)
    r"\bthis round\b",
    r"\bround of\b",
    r"\b(?:first|second|third|last|next|previous) round\b",
    r"\ba round ago\b",
    r"\bbusy machine\b",
    r"\bloaded machine\b",
    r"\bquiet machine\b",
    r"\bshared machine\b",
    r"\bother tenants\b",
    r"\bshared with (?:other|\w+ other)\b",
    r"\bthis was written on\b",
    r"\bwe (?:measured|tried|found|decided)\b",
    r"\bwas tried (?:first )?and dropped\b",
    r"\bthis branch\b",
    r"\b(?:issue|issues) \d+\b",
)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_page_reads_as_a_work_log():
    found = []
    for page in _pages():
        flat = " ".join(page.read_text().split())
        for pattern in WORK_LOG:
            for match in re.finditer(pattern, flat, re.I):
                found.append(f"{page.name}: …{flat[max(0, match.start() - 40) : match.end() + 40]}…")
    assert not found, "\n".join(found)


def test_the_work_log_words_are_caught():
    """The list catches the phrases it is for, and passes the product's own words beside them."""

    def caught(text: str) -> bool:
        return any(re.search(pattern, text, re.I) for pattern in WORK_LOG)

    for phrase in ("measured while five other helpers ran", "the integrator's Ray runs", "as in these sessions",
                   "this round's merge", "a second round of cuts", "measured on a busy machine", "issue 30",
                   "shared with other test runs"):
        assert caught(phrase), phrase
    for phrase in ("the helper `plan_of(...)`", "a round-robin of zones", "the session token", "the load average",
                   "after the merge, the deploy workflow runs"):
        assert not caught(phrase), phrase
