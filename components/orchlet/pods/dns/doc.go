// Package dns forms a pod sandbox's resolver configuration as Kubernetes' kubelet does
// (pkg/kubelet/network/dns): from the pod's dnsPolicy and dnsConfig, the node's --cluster-dns,
// --cluster-domain and --resolv-conf, cut to the resolver's limits with a DNSConfigForming warning.
package dns
