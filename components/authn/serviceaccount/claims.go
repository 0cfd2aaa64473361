package serviceaccount

import (
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
)

// Names of Kubernetes' service account users, groups and extra keys, renamed where they carry
// the product name.
const (
	// UserPrefix starts a service account's user name: system:serviceaccount:<namespace>:<name>.
	UserPrefix = "system:serviceaccount:"
	// AllGroup is the group of every service account; AllGroup+":"+namespace that of a namespace's.
	AllGroup = "system:serviceaccounts"

	PodNameKey      = "authentication.orch.io/pod-name"
	PodUIDKey       = "authentication.orch.io/pod-uid"
	NodeNameKey     = "authentication.orch.io/node-name"
	NodeUIDKey      = "authentication.orch.io/node-uid"
	CredentialIDKey = "authentication.orch.io/credential-id"
)

// Username is the user name of the service account namespace/name.
func Username(namespace, name string) string {
	return UserPrefix + namespace + ":" + name
}

// privateClaims are Kubernetes' private claims, under orch.io rather than kubernetes.io.
type privateClaims struct {
	Orch orchClaims `json:"orch.io,omitempty"`
}

type orchClaims struct {
	Namespace string `json:"namespace,omitempty"`
	Svcacct   ref    `json:"serviceaccount,omitempty"`
	Pod       *ref   `json:"pod,omitempty"`
	Node      *ref   `json:"node,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Binding is what a token is issued for: the service account, and optionally the pod it is
// bound to and the pod's node (recorded, not checked, as Kubernetes' pod node info).
type Binding struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Node           *corev1.Node
}

// claims are Kubernetes' Claims: sub the service account's user, aud, iat and nbf now, exp
// after expiration, a fresh jti, and the private claims naming what the token is bound to.
func claims(b Binding, now time.Time, expiration time.Duration, audiences []string) (*jwt.Claims, *privateClaims) {
	sa := b.ServiceAccount
	public := &jwt.Claims{
		Subject:   Username(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(expiration)),
		ID:        uuid.NewString(),
	}
	private := &privateClaims{Orch: orchClaims{
		Namespace: sa.Namespace,
		Svcacct:   ref{Name: sa.Name, UID: string(sa.UID)},
	}}
	if b.Pod != nil {
		private.Orch.Pod = &ref{Name: b.Pod.Name, UID: string(b.Pod.UID)}
		if b.Node != nil {
			private.Orch.Node = &ref{Name: b.Node.Name, UID: string(b.Node.UID)}
		}
	}
	return public, private
}

// credentialID is Kubernetes' CredentialIDForJTI.
func credentialID(jti string) string {
	if jti == "" {
		return ""
	}
	return fmt.Sprintf("JTI=%s", jti)
}
