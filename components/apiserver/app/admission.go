package app

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/admission/eventratelimit"
	"orch.io/orch/components/apiserver/server"
)

// admissionPlugins are the admission plugins chosen by flag. Each is off unless enabled, as
// EventRateLimit is in Kubernetes. The plugins the server always runs (NamespaceLifecycle,
// ServiceAccount, NodeRestriction, the certificate plugins) are not chosen, and Kubernetes' others
// are not here: naming any of them is refused at start.
var admissionPlugins = map[string]func(config []byte, clk clock.Clock) (admission.Interface, error){
	eventratelimit.PluginName: func(config []byte, clk clock.Clock) (admission.Interface, error) {
		return eventratelimit.New(config, clk)
	},
}

func registeredAdmissionPlugins() []string {
	return slices.Sorted(maps.Keys(admissionPlugins))
}

// validateAdmissionFlags is Kubernetes' check of --enable-admission-plugins,
// --disable-admission-plugins and the deprecated --admission-control, with its messages.
func (o *Options) validateAdmissionFlags() []error {
	var errs []error
	if o.AdmissionControl != nil && (o.EnableAdmissionPlugins != nil || o.DisableAdmissionPlugins != nil) {
		errs = append(errs, fmt.Errorf("admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"))
	}
	for _, f := range []struct {
		flag  string
		names []string
	}{{"admission-control", o.AdmissionControl}, {"enable-admission-plugins", o.EnableAdmissionPlugins}, {"disable-admission-plugins", o.DisableAdmissionPlugins}} {
		for _, name := range f.names {
			if _, ok := admissionPlugins[name]; !ok {
				errs = append(errs, fmt.Errorf("%s plugin %q is unknown", f.flag, name))
			}
		}
	}
	if both := sets.New(o.EnableAdmissionPlugins...).Intersection(sets.New(o.DisableAdmissionPlugins...)); both.Len() > 0 {
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", sets.List(both)))
	}
	return errs
}

// enabledAdmissionPlugins lists, in a fixed order, the plugins the flags turn on: the ones
// enabled (by --enable-admission-plugins or --admission-control) and not disabled.
func (o *Options) enabledAdmissionPlugins() []string {
	on := sets.New(o.EnableAdmissionPlugins...).Insert(o.AdmissionControl...).Delete(o.DisableAdmissionPlugins...)
	return sets.List(on)
}

// enabledAdmission builds the enabled plugins, each from its section of
// --admission-control-config-file (none when the file does not name it). Kubernetes only logs a
// section for a plugin that is not enabled; orch refuses it, since the configuration would do
// nothing while the file says it holds.
func enabledAdmission(o *Options, files *configFiles, clk clock.Clock) (func(*server.Config), error) {
	enabled := o.enabledAdmissionPlugins()
	if a := files.admission; a != nil {
		var errs []error
		for _, p := range a.Config.Plugins {
			if !slices.Contains(enabled, p.Name) {
				errs = append(errs, fmt.Errorf("--admission-control-config-file %s: admission plugin %q is configured but not enabled: enable it with --enable-admission-plugins=%s or remove its section", a.File, p.Name, p.Name))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	plugins := map[string]admission.Interface{}
	for _, name := range enabled {
		var config []byte
		source := "--enable-admission-plugins"
		if a := files.admission; a != nil {
			var err error
			if config, err = a.PluginConfig(name); err != nil {
				return nil, fmt.Errorf("--admission-control-config-file %s: admission plugin %q: %w", a.File, name, err)
			}
			if config != nil {
				source = "--admission-control-config-file " + a.File
			}
		}
		p, err := admissionPlugins[name](config, clk)
		if err != nil {
			return nil, fmt.Errorf("%s: couldn't init admission plugin %q: %w", source, name, err)
		}
		plugins[name] = p
	}
	if len(plugins) == 0 {
		return func(*server.Config) {}, nil
	}
	klog.InfoS("Admission plugins enabled", "plugins", enabled)
	return func(c *server.Config) { c.Admission = plugins }, nil
}
