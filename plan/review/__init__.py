"""What a change does to a stack, offline: the review behind `python -m plan STACK --diff-against REF`.

One module per concern, in the order a run uses them (the command itself is `plan/diff.py`):

- `revisions`: a git revision checked out in a temporary worktree, its stacks, and its plan of a stack.
- `paths`: Pulumi input paths, the differences between two sets of inputs, `ignoreChanges`.
- `replacement`: which input changes the Google provider applies only by replacing the resource.
- `tpu`: TPU node pools as the catalogue reads them: shape, hosts, chips.
- `changes`: the change model (`Report`, `StackDiff`, `Change`, `Detail`) and its JSON.
- `classify`: two plans of a stack -> its changes, the risky ones flagged.
- `capacity`: the TPU chips and hosts a change adds and removes, per slice.
- `gates`: CI gates (`--fail-on-risk`), each an exit status of its own.
- `text`, `markdown`: the review for a terminal and as a pull-request comment.

Nothing is imported here, so that `python -m plan` can read one module without loading the others.
"""
