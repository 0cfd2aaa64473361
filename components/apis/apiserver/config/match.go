package config

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	authorizationv1 "k8s.io/api/authorization/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// MatchConditions are the compiled matchConditions of one webhook authorizer.
type MatchConditions []*Program

// Match evaluates the conditions on a request's v1 SubjectAccessReview spec as Kubernetes does:
// the first condition that evaluates to false excludes the request (the webhook is not called);
// otherwise evalErr holds every condition that failed to evaluate, and the webhook's failurePolicy
// decides. evalErr is also set, for metrics, when a condition failed before another excluded the
// request. No conditions match every request.
func (m MatchConditions) Match(ctx context.Context, spec *authorizationv1.SubjectAccessReviewSpec) (excluded bool, evalErr error) {
	if len(m) == 0 {
		return false, nil
	}
	vars := map[string]any{requestVar: requestValue(spec)}
	var errs []error
	for _, p := range m {
		out, _, err := p.ContextEval(ctx, vars)
		if err != nil {
			errs = append(errs, fmt.Errorf("cel evaluation error: expression '%s' resulted in error: %w", p.Expression, err))
			continue
		}
		match, ok := out.Value().(bool)
		if !ok {
			errs = append(errs, fmt.Errorf("cel evaluation error: expression '%s' eval result type should be bool but got %s", p.Expression, out.Type()))
			continue
		}
		if !match {
			return true, utilerrors.NewAggregate(errs)
		}
	}
	return false, utilerrors.NewAggregate(errs)
}

// requestValue is the value of the variable request. orch's requests carry no field or label
// selectors, so resourceAttributes never has them, as for a Kubernetes request without selectors.
func requestValue(spec *authorizationv1.SubjectAccessReviewSpec) *SubjectAccessReviewSpec {
	r := &SubjectAccessReviewSpec{User: spec.User, Groups: spec.Groups, UID: spec.UID}
	if len(spec.Extra) > 0 {
		r.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			r.Extra[k] = v
		}
	}
	if a := spec.ResourceAttributes; a != nil {
		r.ResourceAttributes = &ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: a.Group, Version: a.Version,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}
	}
	if a := spec.NonResourceAttributes; a != nil {
		r.NonResourceAttributes = &NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	return r
}

// kubernetesFieldPresence makes the native request types behave as the map Kubernetes evaluates
// match conditions over: an absent attribute group (resourceAttributes of a non-resource request,
// a selector of a request without one) is a missing key, so reading it is an evaluation error and
// has() is false, where native types would read a zero value; every other field is always present,
// so has(request.user) is true even for the empty user name.
func kubernetesFieldPresence(e *cel.Env) (*cel.Env, error) {
	fields := map[string]map[string]nativeField{}
	for _, t := range []reflect.Type{
		reflect.TypeFor[SubjectAccessReviewSpec](), reflect.TypeFor[ResourceAttributes](),
		reflect.TypeFor[NonResourceAttributes](), reflect.TypeFor[FieldSelector](),
		reflect.TypeFor[LabelSelector](), reflect.TypeFor[SelectorRequirement](),
	} {
		byName := map[string]nativeField{}
		for i := range t.NumField() {
			f := t.Field(i)
			byName[f.Tag.Get("cel")] = nativeField{index: i, pointer: f.Type.Kind() == reflect.Pointer}
		}
		fields[nativeTypeName(t)] = byName
	}
	return cel.CustomTypeProvider(&presenceProvider{Provider: e.CELTypeProvider(), fields: fields})(e)
}

type nativeField struct {
	index   int
	pointer bool
}

type presenceProvider struct {
	types.Provider
	fields map[string]map[string]nativeField
}

func (p *presenceProvider) FindStructFieldType(structType, fieldName string) (*types.FieldType, bool) {
	ft, ok := p.Provider.FindStructFieldType(structType, fieldName)
	f, known := p.fields[structType][fieldName]
	if !ok || !known {
		return ft, ok
	}
	get := ft.GetFrom
	wrapped := *ft
	if !f.pointer {
		wrapped.IsSet = func(any) bool { return true }
		return &wrapped, true
	}
	isNil := func(obj any) bool {
		return reflect.Indirect(reflect.ValueOf(obj)).Field(f.index).IsNil()
	}
	wrapped.IsSet = func(obj any) bool { return !isNil(obj) }
	wrapped.GetFrom = func(obj any) (any, error) {
		if isNil(obj) {
			return nil, fmt.Errorf("no such key: %s", fieldName)
		}
		return get(obj)
	}
	return &wrapped, true
}
