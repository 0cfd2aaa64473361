package app

import (
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apiserver/nodeproxy"
)

// orchletClientOptions are kube-apiserver's --kubelet-* client flags, renamed: how the server
// reaches a node's orchlet for pods/log, exec, attach, portforward and nodes/proxy.
type orchletClientOptions struct {
	CertFile, KeyFile, CAFile string
	PreferredAddressTypes     []string
	Timeout                   time.Duration
}

func defaultOrchletClientOptions() orchletClientOptions {
	types := make([]string, len(nodeproxy.DefaultPreferredAddressTypes))
	for i, t := range nodeproxy.DefaultPreferredAddressTypes {
		types[i] = string(t)
	}
	return orchletClientOptions{PreferredAddressTypes: types, Timeout: 5 * time.Second}
}

func (o *Options) addOrchletClientFlags(fs *pflag.FlagSet) {
	c := &o.OrchletClient
	fs.StringVar(&c.CertFile, "orchlet-client-certificate", c.CertFile, "Path to a client cert file for TLS, presented to the nodes' orchlet servers.")
	fs.StringVar(&c.KeyFile, "orchlet-client-key", c.KeyFile, "Path to a client key file for TLS, matching --orchlet-client-certificate.")
	fs.StringVar(&c.CAFile, "orchlet-certificate-authority", c.CAFile, "Path to a cert file for the certificate authority of the orchlets' serving certificates. Without it they are not verified.")
	fs.StringSliceVar(&c.PreferredAddressTypes, "orchlet-preferred-address-types", c.PreferredAddressTypes, "List of the preferred NodeAddressTypes to use for orchlet connections.")
	fs.DurationVar(&c.Timeout, "orchlet-timeout", c.Timeout, "Timeout for connecting to an orchlet.")
}

// nodeClient builds the client the flags describe, refusing what it cannot honour by flag.
func (c orchletClientOptions) nodeClient() (*nodeproxy.Client, error) {
	types := make([]corev1.NodeAddressType, len(c.PreferredAddressTypes))
	for i, t := range c.PreferredAddressTypes {
		types[i] = corev1.NodeAddressType(t)
	}
	return nodeproxy.New(nodeproxy.Config{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, PreferredAddressTypes: types, Timeout: c.Timeout})
}
