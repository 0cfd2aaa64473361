package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the configuration kinds.
const GroupName = "apiserver.config.orch.io"

// SchemeGroupVersion is the group-version every configuration file must name in apiVersion.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Kind names of the five top-level configuration kinds.
const (
	KindTracingConfiguration        = "TracingConfiguration"
	KindAdmissionConfiguration      = "AdmissionConfiguration"
	KindAuthenticationConfiguration = "AuthenticationConfiguration"
	KindAuthorizationConfiguration  = "AuthorizationConfiguration"
	KindEncryptionConfiguration     = "EncryptionConfiguration"
)

// TracingConfiguration configures the API server's trace exporter.
type TracingConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// ComponentTracingConfiguration is embedded as in Kubernetes, so its members sit at the top level.
	ComponentTracingConfiguration `json:",inline"`
}

// ComponentTracingConfiguration is the tracing configuration shared by components.
type ComponentTracingConfiguration struct {
	// Endpoint is the collector's host:port; unset means the collector default localhost:4317.
	Endpoint *string `json:"endpoint,omitempty"`
	// SamplingRatePerMillion is the number of samples per million spans; unset follows the parent span.
	SamplingRatePerMillion *int32 `json:"samplingRatePerMillion,omitempty"`
}

// AdmissionConfiguration carries per-plugin admission configuration.
type AdmissionConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Plugins []AdmissionPluginConfiguration `json:"plugins"`
}

// AdmissionPluginConfiguration configures one admission plugin, inline or through a file.
type AdmissionPluginConfiguration struct {
	// Name is the registered admission plugin name.
	Name string `json:"name"`
	// Path is a file holding the plugin's configuration; ignored when Configuration is set.
	Path string `json:"path,omitempty"`
	// Configuration is the inline plugin configuration; it wins over Path.
	Configuration *runtime.RawExtension `json:"configuration,omitempty"`
}

// AuthenticationConfiguration configures JWT authenticators and anonymous access.
type AuthenticationConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	JWT []JWTAuthenticator `json:"jwt"`
	// Anonymous, when present, replaces the --anonymous-auth option, which must then be unset.
	Anonymous *AnonymousAuthConfig `json:"anonymous,omitempty"`
}

// AnonymousAuthConfig says whether and where anonymous requests are allowed.
type AnonymousAuthConfig struct {
	Enabled bool `json:"enabled"`
	// Conditions, when set, limit anonymous access to requests meeting one of them.
	Conditions []AnonymousAuthCondition `json:"conditions,omitempty"`
}

// AnonymousAuthCondition names a path for which anonymous authentication is enabled.
type AnonymousAuthCondition struct {
	Path string `json:"path"`
}

// JWTAuthenticator authenticates tokens issued by one OIDC provider.
type JWTAuthenticator struct {
	Issuer               Issuer                `json:"issuer"`
	ClaimValidationRules []ClaimValidationRule `json:"claimValidationRules,omitempty"`
	ClaimMappings        ClaimMappings         `json:"claimMappings"`
	UserValidationRules  []UserValidationRule  `json:"userValidationRules,omitempty"`
}

// AudienceMatchPolicyType says how a token's aud claim is matched against the audiences.
type AudienceMatchPolicyType string

// AudienceMatchPolicyMatchAny accepts a token whose aud contains at least one listed audience.
const AudienceMatchPolicyMatchAny AudienceMatchPolicyType = "MatchAny"

// EgressSelectorType picks the egress selection that carries an issuer's traffic.
type EgressSelectorType string

// Egress selector types an issuer may name.
const (
	EgressSelectorControlPlane EgressSelectorType = "controlplane"
	EgressSelectorCluster      EgressSelectorType = "cluster"
)

// Issuer holds the connection options of an OIDC provider.
type Issuer struct {
	URL                  string                  `json:"url"`
	DiscoveryURL         string                  `json:"discoveryURL,omitempty"`
	CertificateAuthority string                  `json:"certificateAuthority,omitempty"`
	Audiences            []string                `json:"audiences"`
	AudienceMatchPolicy  AudienceMatchPolicyType `json:"audienceMatchPolicy,omitempty"`
	EgressSelectorType   EgressSelectorType      `json:"egressSelectorType,omitempty"`
}

// ClaimValidationRule checks a token's claims, by claim value or by a CEL expression.
type ClaimValidationRule struct {
	Claim         string `json:"claim,omitempty"`
	RequiredValue string `json:"requiredValue,omitempty"`
	Expression    string `json:"expression,omitempty"`
	Message       string `json:"message,omitempty"`
}

// ClaimMappings maps token claims to the attributes of the authenticated user.
type ClaimMappings struct {
	Username PrefixedClaimOrExpression `json:"username"`
	Groups   PrefixedClaimOrExpression `json:"groups,omitempty"`
	// UID is a pointer so that a present but empty mapping can be told from an absent one.
	UID   *ClaimOrExpression `json:"uid,omitempty"`
	Extra []ExtraMapping     `json:"extra,omitempty"`
}

// PrefixedClaimOrExpression is a claim with a prefix, or a CEL expression.
type PrefixedClaimOrExpression struct {
	Claim string `json:"claim,omitempty"`
	// Prefix is a pointer because it must be set with a claim and may be the empty string.
	Prefix     *string `json:"prefix,omitempty"`
	Expression string  `json:"expression,omitempty"`
}

// ClaimOrExpression is a claim or a CEL expression, exactly one of them.
type ClaimOrExpression struct {
	Claim      string `json:"claim,omitempty"`
	Expression string `json:"expression,omitempty"`
}

// ExtraMapping maps a CEL expression over the claims to a user extra attribute.
type ExtraMapping struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// UserValidationRule checks the final user with a CEL expression over user.
type UserValidationRule struct {
	Expression string `json:"expression"`
	Message    string `json:"message,omitempty"`
}

// AuthorizationConfiguration lists the authorizers in the order they are consulted.
type AuthorizationConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Authorizers []AuthorizerConfiguration `json:"authorizers"`
}

// Authorizer types. Webhook is the type the generic API server serves; AlwaysAllow, AlwaysDeny,
// Node and RBAC are the built-in types orch-apiserver adds, as kube-apiserver does.
const (
	AuthorizerTypeWebhook     = "Webhook"
	AuthorizerTypeAlwaysAllow = "AlwaysAllow"
	AuthorizerTypeAlwaysDeny  = "AlwaysDeny"
	AuthorizerTypeNode        = "Node"
	AuthorizerTypeRBAC        = "RBAC"
)

// AuthorizerConfiguration is one authorizer of the chain.
type AuthorizerConfiguration struct {
	Type    string                `json:"type"`
	Name    string                `json:"name"`
	Webhook *WebhookConfiguration `json:"webhook,omitempty"`
}

// Webhook failure policies.
const (
	FailurePolicyNoOpinion = "NoOpinion"
	FailurePolicyDeny      = "Deny"
)

// WebhookConfiguration configures a webhook authorizer.
type WebhookConfiguration struct {
	AuthorizedTTL                            metav1.Duration         `json:"authorizedTTL"`
	CacheAuthorizedRequests                  *bool                   `json:"cacheAuthorizedRequests,omitempty"`
	UnauthorizedTTL                          metav1.Duration         `json:"unauthorizedTTL"`
	CacheUnauthorizedRequests                *bool                   `json:"cacheUnauthorizedRequests,omitempty"`
	Timeout                                  metav1.Duration         `json:"timeout"`
	SubjectAccessReviewVersion               string                  `json:"subjectAccessReviewVersion"`
	MatchConditionSubjectAccessReviewVersion string                  `json:"matchConditionSubjectAccessReviewVersion"`
	FailurePolicy                            string                  `json:"failurePolicy"`
	ConnectionInfo                           WebhookConnectionInfo   `json:"connectionInfo"`
	MatchConditions                          []WebhookMatchCondition `json:"matchConditions"`
}

// Webhook connection info types.
const (
	ConnectionInfoTypeKubeConfigFile  = "KubeConfigFile"
	ConnectionInfoTypeInClusterConfig = "InClusterConfig"
)

// WebhookConnectionInfo says how to reach an authorization webhook.
type WebhookConnectionInfo struct {
	Type           string  `json:"type"`
	KubeConfigFile *string `json:"kubeConfigFile,omitempty"`
}

// WebhookMatchCondition is a CEL expression over the v1 SubjectAccessReview deciding whether the
// webhook is called.
type WebhookMatchCondition struct {
	Expression string `json:"expression"`
}

// EncryptionConfiguration lists resources and the providers that encrypt them at rest.
type EncryptionConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Resources []ResourceConfiguration `json:"resources"`
}

// ResourceConfiguration binds resources to their ordered encryption providers.
type ResourceConfiguration struct {
	Resources []string                `json:"resources"`
	Providers []ProviderConfiguration `json:"providers"`
}

// ProviderConfiguration holds exactly one provider.
type ProviderConfiguration struct {
	AESGCM    *AESConfiguration       `json:"aesgcm,omitempty"`
	AESCBC    *AESConfiguration       `json:"aescbc,omitempty"`
	Secretbox *SecretboxConfiguration `json:"secretbox,omitempty"`
	Identity  *IdentityConfiguration  `json:"identity,omitempty"`
	KMS       *KMSConfiguration       `json:"kms,omitempty"`
}

// AESConfiguration holds the keys of an AES-GCM or AES-CBC provider.
type AESConfiguration struct {
	Keys []Key `json:"keys"`
}

// SecretboxConfiguration holds the keys of a secretbox provider.
type SecretboxConfiguration struct {
	Keys []Key `json:"keys"`
}

// Key is a named encryption key.
type Key struct {
	Name string `json:"name"`
	// Secret is the key, base64 encoded.
	Secret string `json:"secret"`
}

// IdentityConfiguration is the provider that stores data unencrypted.
type IdentityConfiguration struct{}

// KMSConfiguration configures a KMS plugin provider.
type KMSConfiguration struct {
	// APIVersion is the KMS API version, v1 or v2; empty means v1.
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name"`
	// CacheSize is only allowed for KMS v1; negative disables caching.
	CacheSize *int32           `json:"cachesize,omitempty"`
	Endpoint  string           `json:"endpoint"`
	Timeout   *metav1.Duration `json:"timeout,omitempty"`
}
