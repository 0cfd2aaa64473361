package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var meta = metav1.ObjectMeta{Name: "x", Namespace: "default", ResourceVersion: "1"}

func yes() *bool { t := true; return &t }

func TestConfigMapValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cm   *corev1.ConfigMap
		want string
	}{
		{"valid", &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a.b-c_D": "1"}, BinaryData: map[string][]byte{"bin": {0}}}, ""},
		{"bad key", &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a/b": "1"}}, `data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`},
		{"dot key", &corev1.ConfigMap{ObjectMeta: meta, BinaryData: map[string][]byte{"..": nil}}, `binaryData[..]: Invalid value: "..": must not be '..'`},
		{"duplicate", &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": ""}, BinaryData: map[string][]byte{"k": nil}}, `binaryData[k]: Invalid value: "k": duplicate of key present in data`},
		{"too large", &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": strings.Repeat("x", corev1.MaxSecretSize), "b": "y"}}, "Too long: may not be more than 1048576 bytes"},
		{"bad name", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "X_", Namespace: "default"}}, "metadata.name: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ConfigMapStrategy{}.Validate(tc.cm).ToAggregate()
			switch {
			case tc.want == "" && errs != nil:
				t.Fatalf("refused: %v", errs)
			case tc.want != "" && (errs == nil || !strings.Contains(errs.Error(), tc.want)):
				t.Fatalf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestImmutable(t *testing.T) {
	oldCM := &corev1.ConfigMap{ObjectMeta: meta, Immutable: yes(), Data: map[string]string{"k": "v"}}
	oldSecret := &corev1.Secret{ObjectMeta: meta, Immutable: yes(), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}
	for _, tc := range []struct {
		name string
		errs error
		want string
	}{
		{"configmap labels", ConfigMapStrategy{}.ValidateUpdate(&corev1.ConfigMap{ObjectMeta: withLabel(meta), Immutable: yes(), Data: map[string]string{"k": "v"}}, oldCM).ToAggregate(), ""},
		{"configmap data", ConfigMapStrategy{}.ValidateUpdate(&corev1.ConfigMap{ObjectMeta: meta, Immutable: yes(), Data: map[string]string{"k": "w"}}, oldCM).ToAggregate(), "data: Forbidden: field is immutable when `immutable` is set"},
		{"configmap binaryData", ConfigMapStrategy{}.ValidateUpdate(&corev1.ConfigMap{ObjectMeta: meta, Immutable: yes(), Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": nil}}, oldCM).ToAggregate(), "binaryData: Forbidden: field is immutable when `immutable` is set"},
		{"configmap unset", ConfigMapStrategy{}.ValidateUpdate(&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}, oldCM).ToAggregate(), "immutable: Forbidden: field is immutable when `immutable` is set"},
		{"configmap mutable", ConfigMapStrategy{}.ValidateUpdate(&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "w"}}, &corev1.ConfigMap{ObjectMeta: meta}).ToAggregate(), ""},
		{"secret data", SecretStrategy{}.ValidateUpdate(&corev1.Secret{ObjectMeta: meta, Immutable: yes(), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("w")}}, oldSecret).ToAggregate(), "data: Forbidden: field is immutable when `immutable` is set"},
		{"secret type", SecretStrategy{}.ValidateUpdate(&corev1.Secret{ObjectMeta: meta, Type: "other", Data: map[string][]byte{"k": []byte("v")}}, &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque}).ToAggregate(), "type: Invalid value: \"other\": field is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.errs != nil:
				t.Fatalf("refused: %v", tc.errs)
			case tc.want != "" && (tc.errs == nil || !strings.Contains(tc.errs.Error(), tc.want)):
				t.Fatalf("got %v, want %q", tc.errs, tc.want)
			}
		})
	}
}

func withLabel(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Labels = map[string]string{"a": "b"}
	return m
}

func TestSecretValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		want string
	}{
		{"opaque", &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}}, ""},
		{"bad key", &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"a b": nil}}, `data[a b]: Invalid value: "a b": a valid config key`},
		{"bad stringData key", &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"a b": ""}}, `data[a b]: Invalid value`},
		{"too large", &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"a": strings.Repeat("x", corev1.MaxSecretSize+1)}}, "data: Too long: may not be more than 1048576 bytes"},
		{"tls", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}, "data[tls.key]: Required value"},
		{"dockerconfigjson", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}}, `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>"`},
		{"dockerconfigjson valid", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}}, ""},
		{"basic-auth", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeBasicAuth}, "data[username]: Required value"},
		{"ssh-auth", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeSSHAuth}, "data[ssh-privatekey]: Required value"},
		{"service-account-token", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken}, "metadata.annotations[kubernetes.io/service-account.name]: Required value"},
		{"a type of the user's", &corev1.Secret{ObjectMeta: meta, Type: "example.com/any thing"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s.DeepCopy()
			SecretStrategy{}.PrepareForCreate(s)
			errs := SecretStrategy{}.Validate(s).ToAggregate()
			switch {
			case tc.want == "" && errs != nil:
				t.Fatalf("refused: %v", errs)
			case tc.want != "" && (errs == nil || !strings.Contains(errs.Error(), tc.want)):
				t.Fatalf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

// TestSecretWrite shows the defaults of a write: type Opaque, stringData merged over data and
// not kept.
func TestSecretWrite(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, StringData: map[string]string{"b": "3", "c": "4"}}
	SecretStrategy{}.PrepareForUpdate(s, s.DeepCopy())
	if s.Type != corev1.SecretTypeOpaque || s.StringData != nil || string(s.Data["a"]) != "1" || string(s.Data["b"]) != "3" || string(s.Data["c"]) != "4" {
		t.Fatalf("got type %q data %q stringData %v", s.Type, s.Data, s.StringData)
	}
}

func TestConfigSecretRows(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-2 * time.Hour))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: created}, Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: created}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}}
	for _, tc := range []struct {
		columns []metav1.TableColumnDefinition
		row     []any
		want    string
	}{
		{ConfigMapStrategy{}.Columns(), ConfigMapStrategy{}.Row(cm, now), "Name=c Data=2 Age=120m"},
		{SecretStrategy{}.Columns(), SecretStrategy{}.Row(s, now), "Name=s Type=kubernetes.io/tls Data=2 Age=120m"},
	} {
		var cells []string
		for i, c := range tc.columns {
			cells = append(cells, c.Name+"="+fmt.Sprint(tc.row[i]))
		}
		if got := strings.Join(cells, " "); got != tc.want || len(tc.row) != len(tc.columns) {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}
