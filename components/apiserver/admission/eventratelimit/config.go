package eventratelimit

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind name the plugin's configuration: Kubernetes' group renamed, as every group
// orch serves or reads is. K8sAPIVersion, Kubernetes' own name, is read too, so that a
// configuration written for Kubernetes (or for orch before the rename) works unchanged.
const (
	APIVersion    = "eventratelimit.admission.orch.io/v1alpha1"
	K8sAPIVersion = "eventratelimit.admission.k8s.io/v1alpha1"
	Kind          = "Configuration"
)

// apiVersions are the names the configuration is read under, orch's first.
var apiVersions = []string{APIVersion, K8sAPIVersion}

// LimitType says what a limit's buckets are keyed by.
type LimitType string

// The limit types.
const (
	// ServerLimitType is one bucket shared by every event request the server receives.
	ServerLimitType LimitType = "Server"
	// NamespaceLimitType is one bucket per namespace.
	NamespaceLimitType LimitType = "Namespace"
	// UserLimitType is one bucket per user.
	UserLimitType LimitType = "User"
	// SourceAndObjectLimitType is one bucket per source and involved object of the event.
	SourceAndObjectLimitType LimitType = "SourceAndObject"
)

var limitTypes = []string{string(ServerLimitType), string(NamespaceLimitType), string(UserLimitType), string(SourceAndObjectLimitType)}

// Configuration is eventratelimit.admission.orch.io/v1alpha1 Configuration, Kubernetes'
// eventratelimit.admission.k8s.io/v1alpha1 Configuration renamed.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	// Limits are the limits placed on event requests; at least one is required.
	Limits []Limit `json:"limits"`
}

// Limit configures one limit type.
type Limit struct {
	Type LimitType `json:"type"`
	// QPS is how many event requests a bucket refills per second.
	QPS int32 `json:"qps"`
	// Burst is a bucket's size: how many requests are accepted at once before QPS applies.
	Burst int32 `json:"burst"`
	// CacheSize is how many buckets the LRU keeps (default 4096); an evicted bucket starts full
	// again. A Server limit has one bucket: Validate refuses a cacheSize on it, which Kubernetes
	// would ignore.
	CacheSize int32 `json:"cacheSize,omitempty"`
}

// defaultCacheSize is Kubernetes' LRU size when cacheSize is unset.
const defaultCacheSize = 4096

// LoadConfiguration decodes a configuration from YAML or JSON, strictly; nil data (the plugin
// enabled without a configuration) is an empty configuration, which Validate refuses as
// Kubernetes does.
func LoadConfiguration(data []byte) (*Configuration, error) {
	cfg := &Configuration{}
	if data == nil {
		return cfg, nil
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return nil, fmt.Errorf("the configuration must be one object with apiVersion and kind: %w", err)
	}
	var errs field.ErrorList
	if !slices.Contains(apiVersions, tm.APIVersion) {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, apiVersions))
	}
	if tm.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), tm.Kind, []string{Kind}))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	strict, err := json.UnmarshalStrict(j, cfg)
	if err != nil {
		return nil, err
	}
	// Unknown and duplicate fields are refused: a misspelt limit must not pass unnoticed.
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return cfg, nil
}

// Validate is Kubernetes' validation of the configuration.
func Validate(c *Configuration) field.ErrorList {
	var errs field.ErrorList
	limits := field.NewPath("limits")
	if len(c.Limits) == 0 {
		errs = append(errs, field.Invalid(limits, c.Limits, "must not be empty"))
	}
	for i, l := range c.Limits {
		p := limits.Index(i)
		if !slices.Contains(limitTypes, string(l.Type)) {
			errs = append(errs, field.NotSupported(p.Child("type"), l.Type, limitTypes))
		}
		if l.Type == ServerLimitType && l.CacheSize != 0 {
			errs = append(errs, field.Invalid(p.Child("cacheSize"), l.CacheSize, "a Server limit has one bucket: cacheSize applies only to Namespace, User and SourceAndObject limits"))
		}
		if l.Burst <= 0 {
			errs = append(errs, field.Invalid(p.Child("burst"), l.Burst, "must be positive"))
		}
		if l.QPS <= 0 {
			errs = append(errs, field.Invalid(p.Child("qps"), l.QPS, "must be positive"))
		}
		if l.Type != ServerLimitType && l.CacheSize < 0 {
			errs = append(errs, field.Invalid(p.Child("cacheSize"), l.CacheSize, "must not be negative"))
		}
	}
	return errs
}
