package rbac

import (
	"context"
	"errors"
	"net/http"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rbacapi "orch.io/orch/components/apis/rbac/v1"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz/rbac"
)

// getter answers from a map of namespace/name, NotFound otherwise, or err for every read.
type getter struct {
	objs map[string]runtime.Object
	err  error
}

func (g getter) Get(_ context.Context, namespace, name string) (runtime.Object, error) {
	if g.err != nil {
		return nil, g.err
	}
	if o, ok := g.objs[namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(GroupVersion.WithResource("roles").GroupResource(), name)
}

// The role a binding names is read from its store, as Kubernetes' escalation check reads it: a role
// the index has not heard of yet (here, an index never fed) is judged by its rules, not NotFound;
// a role missing from the store is NotFound; a storage failure is that failure.
func TestBindingReadsItsRoleFromStorage(t *testing.T) {
	secrets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	pods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	// bob holds get on pods in ns, through a role and a binding the index has.
	index := rbac.NewIndex()
	index.Set(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bob-role"}, Rules: []rbacv1.PolicyRule{pods}})
	index.Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bob"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacapi.GroupName, Kind: "Role", Name: "bob-role"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
	index.MarkSynced()
	stores := &RoleStores{
		Roles: getter{objs: map[string]runtime.Object{
			"ns/pod-reader": &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{pods}},
		}},
		ClusterRoles: getter{objs: map[string]runtime.Object{
			"/secret-reader": &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: []rbacv1.PolicyRule{secrets}},
			"/pod-viewer":    &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-viewer"}, Rules: []rbacv1.PolicyRule{pods}},
		}},
	}
	bob := &authn.UserInfo{Name: "bob", Groups: []string{"system:authenticated"}}
	binding := func(kind, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacapi.GroupName, Kind: kind, Name: role}}
	}
	for _, tc := range []struct {
		name   string
		stores *RoleStores
		obj    *rbacv1.RoleBinding
		code   int32 // 0: allowed
	}{
		{"a role he holds, only in the store", stores, binding("Role", "pod-reader"), 0},
		{"a cluster role he holds, only in the store", stores, binding("ClusterRole", "pod-viewer"), 0},
		{"a cluster role he does not hold, only in the store", stores, binding("ClusterRole", "secret-reader"), http.StatusForbidden},
		{"a role in neither", stores, binding("Role", "ghost"), http.StatusNotFound},
		{"a cluster role in neither", stores, binding("ClusterRole", "ghost"), http.StatusNotFound},
		{"the store failing", &RoleStores{Roles: getter{err: errors.New("etcd unavailable")}}, binding("Role", "pod-reader"), http.StatusInternalServerError},
		{"without stores, the index alone: not there yet", nil, binding("Role", "pod-reader"), http.StatusNotFound},
		{"without stores, the index alone: there", nil, binding("Role", "bob-role"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Guard{Roles: index, RoleStores: tc.stores}
			err := g.ConfirmWrite(context.Background(), bob, tc.obj, nil)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var code int32 = http.StatusInternalServerError // an error that is no Status
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				code = status.Status().Code
			}
			if code != tc.code {
				t.Fatalf("got %d (%v), want %d", code, err, tc.code)
			}
		})
	}
}
