package podsync

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/events"
)

// expand is Kubernetes' third_party/forked/golang/expansion.Expand: $(NAME) is replaced by the
// mapping's value, $$ is a literal $, and anything else, an unknown name or an unclosed
// reference included, stays as written.
func expand(input string, mapping func(string) string) string {
	var buf bytes.Buffer
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			buf.WriteString(mapping(read))
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

func readVariableName(input string) (string, bool, int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	}
	return "$" + input[:1], false, 1
}

// mappingFor is expansion.MappingFuncFor: a name not found stays $(name).
func mappingFor(vars map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
}

// containerEnv is the kubelet's makeEnvironmentVariables: envFrom's variables first, then each
// of env's, its value expanded against the variables before it, or read from the pod (fieldRef),
// the container's resources (resourceFieldRef) or a configmap or secret (in API-server mode).
// The kubelet sends them in a map's order; here they keep the order they are declared in, a later
// duplicate taking the earlier one's place.
func (s *Syncer) containerEnv(ctx context.Context, p *PodState, c *corev1.Container) ([]*runtimeapi.KeyValue, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	if s.volumes.ReadsObjects() {
		if err := s.envFromObjects(ctx, p, c, vars, &order); err != nil {
			return nil, nil, err
		}
	}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case s.volumes.ReadsObjects() && e.ValueFrom != nil && (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil):
			value, skip, err := s.envKeyRef(ctx, p, e.ValueFrom)
			if err != nil {
				return nil, nil, err
			}
			if skip {
				continue
			}
			v = value
		case v != "":
			v = expand(v, mappingFor(vars))
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			var err error
			if v, err = s.volumes.PodFieldValue(p.volumes(), e.ValueFrom.FieldRef); err != nil {
				return nil, nil, err
			}
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			var err error
			if v, err = s.volumes.ResourceFieldValue(p.Pod, c, e.ValueFrom.ResourceFieldRef); err != nil {
				return nil, nil, err
			}
		case e.ValueFrom != nil:
			// Admission refuses the other sources; one reaching here is a bug, not an empty value.
			return nil, nil, fmt.Errorf("env %s: unsupported value source", e.Name)
		}
		if _, ok := vars[e.Name]; !ok {
			order = append(order, e.Name)
		}
		vars[e.Name] = v
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, name := range order {
		out = append(out, &runtimeapi.KeyValue{Key: name, Value: []byte(vars[name])})
	}
	return out, vars, nil
}

// expandCommand is kubecontainer.ExpandContainerCommandAndArgs.
func expandCommand(list []string, vars map[string]string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, arg := range list {
		out[i] = expand(arg, mappingFor(vars))
	}
	return out
}

// ReasonInvalidEnvironmentVariableNames is the kubelet's event for envFrom keys it skipped.
const ReasonInvalidEnvironmentVariableNames = "InvalidEnvironmentVariableNames"

// envFromObjects adds the variables of c's envFrom to vars, in key order, as the kubelet's
// makeEnvironmentVariables: a prefix prepended, keys that are not valid names skipped with an
// event, a missing optional object skipped.
func (s *Syncer) envFromObjects(ctx context.Context, p *PodState, c *corev1.Container, vars map[string]string, order *[]string) error {
	for _, from := range c.EnvFrom {
		secret, name, optional, kind := false, "", (*bool)(nil), "configMap"
		switch {
		case from.ConfigMapRef != nil:
			name, optional = from.ConfigMapRef.Name, from.ConfigMapRef.Optional
		case from.SecretRef != nil:
			secret, name, optional, kind = true, from.SecretRef.Name, from.SecretRef.Optional, "secret"
		default:
			continue
		}
		data, err := s.volumes.ReadObject(ctx, secret, p.Pod.Namespace, name, optional)
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var invalid []string
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsEnvVarName(name)) > 0 {
				invalid = append(invalid, name)
				continue
			}
			if _, ok := vars[name]; !ok {
				*order = append(*order, name)
			}
			vars[name] = string(data[k])
		}
		if len(invalid) > 0 {
			s.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, ReasonInvalidEnvironmentVariableNames, "Env",
				"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.", strings.Join(invalid, ", "), kind, p.Pod.Namespace, name)
		}
	}
	return nil
}

// envKeyRef is the value of a configMapKeyRef or secretKeyRef; skip is true for a missing
// optional object or key.
func (s *Syncer) envKeyRef(ctx context.Context, p *PodState, src *corev1.EnvVarSource) (value string, skip bool, err error) {
	secret, name, key, optional, kind := false, "", "", (*bool)(nil), "ConfigMap"
	if r := src.ConfigMapKeyRef; r != nil {
		name, key, optional = r.Name, r.Key, r.Optional
	} else {
		r := src.SecretKeyRef
		secret, name, key, optional, kind = true, r.Name, r.Key, r.Optional, "Secret"
	}
	data, err := s.volumes.ReadObject(ctx, secret, p.Pod.Namespace, name, optional)
	if err != nil {
		return "", false, err
	}
	v, ok := data[key]
	if !ok {
		if ptr.Deref(optional, false) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, p.Pod.Namespace, name)
	}
	return string(v), false, nil
}
