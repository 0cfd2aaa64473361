package core

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// immutableMessage is Kubernetes' refusal of a change to an immutable ConfigMap or Secret.
const immutableMessage = "field is immutable when `immutable` is set"

// ConfigMapStrategy is the rules of configmaps, as Kubernetes' ValidateConfigMap.
type ConfigMapStrategy struct{}

func (ConfigMapStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("configmaps")
}
func (ConfigMapStrategy) Kind() string                         { return "ConfigMap" }
func (ConfigMapStrategy) NamespaceScoped() bool                { return true }
func (ConfigMapStrategy) New() runtime.Object                  { return &corev1.ConfigMap{} }
func (ConfigMapStrategy) NewList() runtime.Object              { return &corev1.ConfigMapList{} }
func (ConfigMapStrategy) AllowCreateOnUpdate() bool            { return false }
func (ConfigMapStrategy) PrepareForCreate(runtime.Object)      {}
func (ConfigMapStrategy) PrepareForUpdate(_, _ runtime.Object) {}

func (ConfigMapStrategy) Validate(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	errs := apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateKey(field.NewPath("data").Key(key), key)...)
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateKey(field.NewPath("binaryData").Key(key), key)...)
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, "duplicate of key present in data"))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

// validateKey is IsConfigMapKey's rule for a data key.
func validateKey(path *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path, key, msg))
	}
	return errs
}

func (s ConfigMapStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cm, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	errs := generic.ValidateObjectMetaUpdate(&cm.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	if isTrue(o.Immutable) {
		errs = append(errs, immutableChanges(cm.Immutable, apiequality.Semantic.DeepEqual(cm.Data, o.Data), apiequality.Semantic.DeepEqual(cm.BinaryData, o.BinaryData), "binaryData")...)
	}
	return append(errs, s.Validate(obj)...)
}

// immutableChanges refuses, once immutable was set, unsetting it and changing data or other
// (binaryData of a ConfigMap, stringData of a Secret, which is data once merged).
func immutableChanges(immutable *bool, sameData, sameOther bool, other string) field.ErrorList {
	var errs field.ErrorList
	if !isTrue(immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMessage))
	}
	if !sameData {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMessage))
	}
	if !sameOther {
		errs = append(errs, field.Forbidden(field.NewPath(other), immutableMessage))
	}
	return errs
}

func isTrue(b *bool) bool { return b != nil && *b }

func (ConfigMapStrategy) SelectableFields(obj runtime.Object) fields.Set {
	cm := obj.(*corev1.ConfigMap)
	return fields.Set{"metadata.name": cm.Name, "metadata.namespace": cm.Namespace}
}

func (ConfigMapStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Data", Type: "string", Description: "Data contains the configuration data."}, ageColumn}
}

func (ConfigMapStrategy) Row(obj runtime.Object, now time.Time) []any {
	cm := obj.(*corev1.ConfigMap)
	return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(now, cm.CreationTimestamp)}
}

// SecretStrategy is the rules of secrets, as Kubernetes' ValidateSecret. Type names such as
// kubernetes.io/tls are values of the API and keep Kubernetes' spelling.
type SecretStrategy struct{}

func (SecretStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("secrets")
}
func (SecretStrategy) Kind() string              { return "Secret" }
func (SecretStrategy) NamespaceScoped() bool     { return true }
func (SecretStrategy) New() runtime.Object       { return &corev1.Secret{} }
func (SecretStrategy) NewList() runtime.Object   { return &corev1.SecretList{} }
func (SecretStrategy) AllowCreateOnUpdate() bool { return false }

func (SecretStrategy) PrepareForCreate(obj runtime.Object) { normalizeSecret(obj.(*corev1.Secret)) }

func (SecretStrategy) PrepareForUpdate(obj, _ runtime.Object) { normalizeSecret(obj.(*corev1.Secret)) }

// normalizeSecret is what Kubernetes' defaulting and conversion do to a v1 Secret written: type
// Opaque by default, and stringData merged over data, never stored.
func normalizeSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func (SecretStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	data := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		errs = append(errs, validateKey(data.Key(key), key)...)
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(data, "", corev1.MaxSecretSize))
	}
	return append(errs, validateSecretType(s)...)
}

// validateSecretType is ValidateSecret's per-type rules.
func validateSecretType(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	data := field.NewPath("data")
	requireJSON := func(key string) {
		value, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(data.Key(key), ""))
			return
		}
		if err := json.Unmarshal(value, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, password := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !password {
			errs = append(errs, field.Required(data.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(data.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := s.Data[key]; !ok {
				errs = append(errs, field.Required(data.Key(key), ""))
			}
		}
	}
	// Opaque and other types are the user's, with no rules, as in Kubernetes.
	return errs
}

func (st SecretStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*corev1.Secret), old.(*corev1.Secret)
	errs := generic.ValidateObjectMetaUpdate(&s.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateImmutableField(s.Type, o.Type, field.NewPath("type"))...)
	if isTrue(o.Immutable) {
		errs = append(errs, immutableChanges(s.Immutable, apiequality.Semantic.DeepEqual(s.Data, o.Data), true, "")...)
	}
	return append(errs, st.Validate(obj)...)
}

func (SecretStrategy) SelectableFields(obj runtime.Object) fields.Set {
	s := obj.(*corev1.Secret)
	return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace, "type": string(s.Type)}
}

func (SecretStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Type", Type: "string", Description: "Used to facilitate programmatic handling of secret data."},
		{Name: "Data", Type: "string", Description: "Data contains the secret data."}, ageColumn}
}

func (SecretStrategy) Row(obj runtime.Object, now time.Time) []any {
	s := obj.(*corev1.Secret)
	return []any{s.Name, string(s.Type), int64(len(s.Data)), age(now, s.CreationTimestamp)}
}
