package options

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// apiServerModeSetting is a setting the orchlet acts on only in API-server mode (registration, node
// status, the API client, certificates, the cloud provider), as the kubelet does with a kubeconfig.
// A standalone run (no --orchconfig) that sets one to anything but its default is refused: with no
// API server nothing would act on it, and an agent that accepted it would let the user believe it
// holds.
type apiServerModeSetting struct {
	option string
	// field is the configuration file's field; empty for an option only the command line has, which
	// flag then names in Flags.
	field, flag string
}

var apiServerModeSettings = []apiServerModeSetting{
	{option: "register-node", field: "registerNode"},
	{option: "register-with-taints", field: "registerWithTaints"},
	{option: "node-status-update-frequency", field: "nodeStatusUpdateFrequency"},
	{option: "node-status-max-images", field: "nodeStatusMaxImages"},
	{option: "kube-api-qps", field: "kubeAPIQPS"},
	{option: "kube-api-burst", field: "kubeAPIBurst"},
	{option: "kube-api-content-type", field: "contentType"},
	{option: "rotate-certificates", field: "rotateCertificates"},
	{option: "rotate-server-certificates", field: "serverTLSBootstrap"},
	{option: "bootstrap-kubeconfig", flag: "BootstrapKubeconfig"},
	{option: "node-ip", flag: "NodeIP"},
	{option: "node-labels", flag: "NodeLabels"},
	{option: "provider-id", flag: "ProviderID"},
	{option: "cloud-provider", flag: "CloudProvider"},
}

// RefuseAPIServerModeSettings refuses, without --orchconfig, every API-server-mode setting that
// differs from its default, naming each option and its file field. Validation alone accepts them (a
// configuration may be checked before it is deployed with --orchconfig); running standalone pods
// with them is refused.
func (o *Options) RefuseAPIServerModeSettings() error {
	if o.Flags.Orchconfig != "" {
		return nil
	}
	def, err := Parse(nil, o.Version)
	if err != nil {
		return fmt.Errorf("reading the defaults: %w", err)
	}
	got, err := fieldValues(o.Config)
	if err != nil {
		return err
	}
	want, err := fieldValues(def.Config)
	if err != nil {
		return err
	}
	flags, defFlags := reflect.ValueOf(o.Flags), reflect.ValueOf(defaultFlags())
	var errs []error
	for _, u := range apiServerModeSettings {
		var changed bool
		name := "--" + u.option
		if u.field != "" {
			changed = !reflect.DeepEqual(got[u.field], want[u.field])
			name += " (" + u.field + ")"
		} else {
			changed = !reflect.DeepEqual(flags.FieldByName(u.flag).Interface(), defFlags.FieldByName(u.flag).Interface())
		}
		if changed {
			errs = append(errs, fmt.Errorf("%s: it acts only in API-server mode; set --orchconfig or leave it at its default", name))
		}
	}
	return errors.Join(errs...)
}

// fieldValues is the configuration as its file fields, so settings are compared as a file reads them.
func fieldValues(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}
