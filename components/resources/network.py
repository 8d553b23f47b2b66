"""The VPC the cluster lives in: a VPC-native subnet, and Cloud NAT so private nodes reach out without public IPs."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..spec.models import NetworkConfig

PODS_RANGE = "pods"
SERVICES_RANGE = "services"


class Network(pulumi.ComponentResource):
    """A new network (or the existing one named in config), with the pod and service secondary ranges named."""

    network: pulumi.Output[str]
    subnetwork: pulumi.Output[str]
    pods_range_name: str
    services_range_name: str

    def __init__(
        self, name: str, project: str, region: str, net: NetworkConfig, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ray-tpu-gke:index:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if net.existing:
            network, subnetwork, self.pods_range_name, self.services_range_name = _existing(net)
            self.network = pulumi.Output.from_input(network)
            self.subnetwork = pulumi.Output.from_input(subnetwork)
        else:
            vpc = gcp.compute.Network(
                name,
                name=name,
                project=project,
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                opts=child,
            )
            subnet = gcp.compute.Subnetwork(
                name,
                name=name,
                project=project,
                region=region,
                network=vpc.id,
                ip_cidr_range=net.subnet_cidr,
                secondary_ip_ranges=[
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=PODS_RANGE, ip_cidr_range=net.pods_cidr),
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(
                        range_name=SERVICES_RANGE, ip_cidr_range=net.services_cidr
                    ),
                ],
                private_ip_google_access=True,
                log_config=gcp.compute.SubnetworkLogConfigArgs(
                    aggregation_interval="INTERVAL_10_MIN", flow_sampling=0.5, metadata="INCLUDE_ALL_METADATA"
                ),
                opts=child,
            )
            # An explicit, logged deny of all other ingress; GKE adds its own higher-priority allow rules for the
            # control plane and in-cluster traffic.
            gcp.compute.Firewall(
                f"{name}-deny-ingress",
                name=f"{name}-deny-ingress",
                project=project,
                network=vpc.id,
                direction="INGRESS",
                priority=65534,
                denies=[gcp.compute.FirewallDenyArgs(protocol="all")],
                source_ranges=["0.0.0.0/0"],
                log_config=gcp.compute.FirewallLogConfigArgs(metadata="INCLUDE_ALL_METADATA"),
                opts=child,
            )
            router = gcp.compute.Router(name, name=name, project=project, region=region, network=vpc.id, opts=child)
            gcp.compute.RouterNat(
                name,
                name=name,
                project=project,
                region=region,
                router=router.name,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                opts=child,
            )
            self.network = vpc.id
            self.subnetwork = subnet.id
            self.pods_range_name = PODS_RANGE
            self.services_range_name = SERVICES_RANGE
        self.register_outputs({"network": self.network, "subnetwork": self.subnetwork})


def _existing(net: NetworkConfig) -> tuple[str, str, str, str]:
    """The existing network, subnetwork and secondary ranges, which validation requires together."""
    names = (net.network, net.subnetwork, net.pods_range_name, net.services_range_name)
    if any(name is None for name in names):
        raise ValueError("an existing network needs network, subnetwork, podsRangeName and servicesRangeName")
    return (str(names[0]), str(names[1]), str(names[2]), str(names[3]))
