"""Deploy-time checks of facts that change and cannot be known offline: what GKE's release channel creates, and the
project's TPU quota. Each returns an Output that the resources it guards take as an input, so a failed check stops
`pulumi up` before they are created, with a message that says what to do.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from .. import admission


class PreflightError(Exception):
    """A deploy-time check failed; the message says what the project has and what the stack needs."""


def gke_version(project: str, location: str, channel: str, pin: str | None,
                need: admission.VersionNeed) -> pulumi.Output[str]:
    """The release channel's name, once the version GKE would create is at least what the stack needs: the channel's
    default when nothing is pinned, the newest patch of a minor alias, or an exact pin GKE still offers."""
    prefix = f"{pin}." if pin and admission.is_minor_alias(pin) else None
    versions = gcp.container.get_engine_versions_output(project=project, location=location, version_prefix=prefix)

    def check(args) -> str:
        defaults, latest, valid = args
        if pin is None:
            created, what = (defaults or {}).get(channel), f"GKE's {channel} channel in {location} creates"
        elif prefix:
            created, what = latest, f"minMasterVersion {pin} resolves in {location} to"
        else:
            if valid and pin not in valid:
                raise PreflightError(f"GKE no longer offers {pin} in {location}; pin a minor such as "
                                     f"{'.'.join(pin.split('.')[:2])} or leave minMasterVersion unset")
            return channel
        if created and not admission.version_satisfies(created, need.version):
            minor = ".".join(need.version.split(".")[:2])
            raise PreflightError(f"{what} {created}, older than {need.version} that {need.reason} needs; pin "
                                 f"cluster.minMasterVersion to {minor} (or later) or choose a faster channel")
        return channel

    return pulumi.Output.all(versions.release_channel_default_version, versions.latest_master_version,
                             versions.valid_master_versions).apply(check)


def accelerator_quota(project: str, needs: list[admission.QuotaNeed], gate: pulumi.Input[str]) -> pulumi.Output[str]:
    """`gate` (e.g. the cluster name) once the project's TPU and GPU quota covers every need; shortfalls stop the
    deploy."""
    if not needs:
        return pulumi.Output.from_input(gate)
    infos = gcp.cloudquota.get_s_quota_infos_output(parent=f"projects/{project}", service="compute.googleapis.com")

    def check(args):
        quota_infos, value = args
        available: dict[tuple[str, str], float] = {}
        for info in quota_infos or []:
            for dimension in _field(info, "dimensions_infos") or []:
                dims = dict(_field(dimension, "dimensions") or {})
                region = dims.pop("region", None)
                extra = "".join(f", {k}={v}" for k, v in sorted(dims.items()))
                details = _field(dimension, "details")
                if region and details:
                    available[(f"{_field(info, 'quota_id')}{extra}", region)] = float(_field(details[0], "value"))
        errors, warnings = admission.quota_shortfalls(needs, available)
        for warning in warnings:
            pulumi.log.warn(warning)
        if errors:
            raise PreflightError("; ".join(errors))
        return value

    return pulumi.Output.all(infos.quota_infos, gate).apply(check)


def _field(value, name: str):
    """A field of an invoke result, which arrives as a typed object or, nested in an output, as a plain mapping."""
    if isinstance(value, dict):
        camel = name.split("_")[0] + "".join(part.title() for part in name.split("_")[1:])
        return value.get(name, value.get(camel))
    return getattr(value, name, None)
