package options

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// unhonoured is a setting this orchlet parses and validates but does not act on yet. A run that
// sets one to anything but its default is refused: an agent that accepted it would let the user
// believe it holds (an eviction threshold, a cgroup limit) when nothing enforces it.
type unhonoured struct {
	option string
	// field is the configuration file's field; empty for an option only the command line has, which
	// flag then names in Flags.
	field, flag string
	// missing says what this orchlet lacks, in the user's words.
	missing string
	// apiOnly: the setting acts in API-server mode and is refused only without --orchconfig.
	apiOnly bool
}

const (
	onlyAPIMode = "it acts only in API-server mode"
	missingNUMA = "the memory manager (its Static policy and reserved memory) is not built"
)

var unhonouredSettings = []unhonoured{
	{option: "memory-manager-policy", field: "memoryManagerPolicy", missing: missingNUMA},
	{option: "reserved-memory", field: "reservedMemory", missing: missingNUMA},

	{option: "register-node", field: "registerNode", missing: onlyAPIMode, apiOnly: true},
	{option: "register-with-taints", field: "registerWithTaints", missing: onlyAPIMode, apiOnly: true},
	{option: "node-status-update-frequency", field: "nodeStatusUpdateFrequency", missing: onlyAPIMode, apiOnly: true},
	{option: "node-status-max-images", field: "nodeStatusMaxImages", missing: onlyAPIMode, apiOnly: true},
	{option: "kube-api-qps", field: "kubeAPIQPS", missing: onlyAPIMode, apiOnly: true},
	{option: "kube-api-burst", field: "kubeAPIBurst", missing: onlyAPIMode, apiOnly: true},
	{option: "kube-api-content-type", field: "contentType", missing: onlyAPIMode, apiOnly: true},
	{option: "rotate-certificates", field: "rotateCertificates", missing: onlyAPIMode, apiOnly: true},
	{option: "rotate-server-certificates", field: "serverTLSBootstrap", missing: onlyAPIMode, apiOnly: true},
	{option: "bootstrap-kubeconfig", flag: "BootstrapKubeconfig", missing: onlyAPIMode, apiOnly: true},
	{option: "node-ip", flag: "NodeIP", missing: onlyAPIMode, apiOnly: true},
	{option: "node-labels", flag: "NodeLabels", missing: onlyAPIMode, apiOnly: true},
	{option: "provider-id", flag: "ProviderID", missing: onlyAPIMode, apiOnly: true},
	{option: "cloud-provider", flag: "CloudProvider", missing: onlyAPIMode, apiOnly: true},
}

// Unhonoured refuses every setting that differs from its default although this orchlet does not act
// on it yet, naming each option, its file field and what is missing. Validation alone accepts them
// (a configuration may be checked before the agent that honours it is deployed); running pods with
// them is refused.
func (o *Options) Unhonoured() error {
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
	for _, u := range unhonouredSettings {
		if u.apiOnly && o.Flags.Orchconfig != "" {
			continue
		}
		var changed bool
		name := "--" + u.option
		if u.field != "" {
			changed = !reflect.DeepEqual(got[u.field], want[u.field])
			name += " (" + u.field + ")"
		} else {
			changed = !reflect.DeepEqual(flags.FieldByName(u.flag).Interface(), defFlags.FieldByName(u.flag).Interface())
		}
		if changed && u.apiOnly {
			errs = append(errs, fmt.Errorf("%s: %s; set --orchconfig or leave it at its default", name, u.missing))
		} else if changed {
			errs = append(errs, fmt.Errorf("%s: this orchlet does not act on it yet (%s); leave it at its default", name, u.missing))
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
