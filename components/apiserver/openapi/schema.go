package openapi

import (
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// schemas collects the named schemas of every type reachable from the resources' types.
type schemas struct {
	refPrefix    string
	defs         map[string]map[string]any
	descriptions map[reflect.Type]Descriptions
}

// Descriptions document a type for `kubectl explain`: Type describes the type itself, Fields its
// fields by JSON name.
type Descriptions struct {
	Type   string
	Fields map[string]string
}

// Types Kubernetes documents as scalars though Go holds them as structs.
var (
	timeType       = reflect.TypeFor[metav1.Time]()
	microTimeType  = reflect.TypeFor[metav1.MicroTime]()
	durationType   = reflect.TypeFor[metav1.Duration]()
	quantityType   = reflect.TypeFor[resource.Quantity]()
	intOrString    = reflect.TypeFor[intstr.IntOrString]()
	rawExtension   = reflect.TypeFor[runtime.RawExtension]()
	fieldsV1Type   = reflect.TypeFor[metav1.FieldsV1]()
	dateTimeFormat = map[string]any{"type": "string", "format": "date-time"}
)

// definitionName is Kubernetes' naming of a Go type: its package path reversed at the domain, then
// the type name (k8s.io/api/core/v1.ObjectReference is io.k8s.api.core.v1.ObjectReference).
func definitionName(t reflect.Type) string {
	pkg := t.PkgPath()
	domain, rest, _ := strings.Cut(pkg, "/")
	parts := strings.Split(domain, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	// orch.io/orch/components/apis/events/v1 reads io.orch.api.events.v1, as k8s.io/api/core/v1 reads io.k8s.api.core.v1.
	if r, ok := strings.CutPrefix(rest, "orch/components/apis/"); ok {
		rest = "api/" + r
	}
	return strings.Join(parts, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

// schemaOf answers the schema of t: inline for scalars, lists and maps, a reference for structs,
// whose definition it adds.
func (s *schemas) schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType, microTimeType:
		return clone(dateTimeFormat)
	case durationType:
		return map[string]any{"type": "string"}
	case quantityType, intOrString:
		return map[string]any{"x-kubernetes-int-or-string": true}
	case rawExtension, fieldsV1Type:
		return map[string]any{"type": "object"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": s.schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.schemaOf(t.Elem())}
	case reflect.Struct:
		name := definitionName(t)
		if _, ok := s.defs[name]; !ok {
			s.defs[name] = nil // taken before the fields, so a recursive type ends
			s.defs[name] = s.structSchema(t)
		}
		return map[string]any{"$ref": s.refPrefix + name}
	}
	return map[string]any{"type": "object"}
}

func (s *schemas) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	s.addFields(t, props)
	out := map[string]any{"type": "object", "properties": props}
	if d, ok := s.descriptions[t]; ok {
		if d.Type != "" {
			out["description"] = d.Type
		}
		for name, text := range d.Fields {
			if p, ok := props[name].(map[string]any); ok {
				// A reference cannot carry siblings in v2; wrap it so the description shows.
				if ref, isRef := p["$ref"]; isRef {
					p = map[string]any{"allOf": []any{map[string]any{"$ref": ref}}}
					props[name] = p
				}
				p["description"] = text
			}
		}
	}
	return out
}

// addFields adds t's JSON fields to props, inlining embedded structs as encoding/json does.
func (s *schemas) addFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				s.addFields(ft, props)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = s.schemaOf(f.Type)
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
