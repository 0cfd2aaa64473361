package rbac

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rbacapi "orch.io/orch/components/apis/rbac/v1"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
)

// Index holds a server's roles, cluster roles, role bindings and cluster role bindings, and finds
// the rules that apply to a user: bindings are indexed by the users and groups they name (a service
// account is the user it authenticates as), so a request costs a look-up per name and group of its
// user, not a walk over every binding. Roles are read by name when a binding is followed, so a
// binding may name a role made after it. It is safe for concurrent use.
type Index struct {
	mu                  sync.RWMutex
	roles               map[string]*roleEntry // namespace/name
	clusterRoles        map[string]*roleEntry
	roleBindings        map[string]*bindingEntry // namespace/name
	clusterRoleBindings map[string]*bindingEntry
	// clusterBySubject and bySubject (per namespace) list, sorted by name, the bindings naming a
	// subject.
	clusterBySubject map[subjectKey][]*bindingEntry
	bySubject        map[string]map[subjectKey][]*bindingEntry
	synced           atomic.Bool
}

// roleEntry is a role's rules, their groups canonical.
type roleEntry struct {
	rules []rbacv1.PolicyRule
}

type bindingEntry struct {
	kind      string // RoleBinding or ClusterRoleBinding
	namespace string
	name      string
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
	keys      []subjectKey // one per subject, in order; the zero key for a subject matching nobody
}

// subjectKey is a user or group name a binding names.
type subjectKey struct {
	group bool
	name  string
}

// NewIndex returns an empty index, not yet synced.
func NewIndex() *Index {
	return &Index{
		roles: map[string]*roleEntry{}, clusterRoles: map[string]*roleEntry{},
		roleBindings: map[string]*bindingEntry{}, clusterRoleBindings: map[string]*bindingEntry{},
		clusterBySubject: map[subjectKey][]*bindingEntry{}, bySubject: map[string]map[subjectKey][]*bindingEntry{},
	}
}

// MarkSynced records that every kind has been loaded once; before that the authorizer allows
// nothing, saying why.
func (x *Index) MarkSynced() { x.synced.Store(true) }

// Synced tells whether every kind has been loaded once.
func (x *Index) Synced() bool { return x.synced.Load() }

// Set adds or replaces a Role, ClusterRole, RoleBinding or ClusterRoleBinding; other objects are
// ignored.
func (x *Index) Set(obj runtime.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.set(obj)
}

// Delete removes a Role, ClusterRole, RoleBinding or ClusterRoleBinding, by namespace and name.
func (x *Index) Delete(obj runtime.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch o := obj.(type) {
	case *rbacv1.Role:
		delete(x.roles, o.Namespace+"/"+o.Name)
	case *rbacv1.ClusterRole:
		delete(x.clusterRoles, o.Name)
	case *rbacv1.RoleBinding:
		x.unbind(x.roleBindings, o.Namespace+"/"+o.Name)
	case *rbacv1.ClusterRoleBinding:
		x.unbind(x.clusterRoleBindings, o.Name)
	}
}

// Replace makes objs the whole content of the kind of example (a relist).
func (x *Index) Replace(example runtime.Object, objs []runtime.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch example.(type) {
	case *rbacv1.Role:
		x.roles = map[string]*roleEntry{}
	case *rbacv1.ClusterRole:
		x.clusterRoles = map[string]*roleEntry{}
	case *rbacv1.RoleBinding:
		x.roleBindings = map[string]*bindingEntry{}
		x.bySubject = map[string]map[subjectKey][]*bindingEntry{}
	case *rbacv1.ClusterRoleBinding:
		x.clusterRoleBindings = map[string]*bindingEntry{}
		x.clusterBySubject = map[subjectKey][]*bindingEntry{}
	}
	for _, obj := range objs {
		x.set(obj)
	}
}

func (x *Index) set(obj runtime.Object) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		x.roles[o.Namespace+"/"+o.Name] = &roleEntry{rules: CanonicalRules(o.Rules)}
	case *rbacv1.ClusterRole:
		x.clusterRoles[o.Name] = &roleEntry{rules: CanonicalRules(o.Rules)}
	case *rbacv1.RoleBinding:
		x.bind(x.roleBindings, o.Namespace+"/"+o.Name, &bindingEntry{
			kind: "RoleBinding", namespace: o.Namespace, name: o.Name, roleRef: o.RoleRef, subjects: o.Subjects,
		})
	case *rbacv1.ClusterRoleBinding:
		x.bind(x.clusterRoleBindings, o.Name, &bindingEntry{
			kind: "ClusterRoleBinding", name: o.Name, roleRef: o.RoleRef, subjects: o.Subjects,
		})
	}
}

// bind indexes b under each subject it names, replacing the binding of the same key.
func (x *Index) bind(all map[string]*bindingEntry, key string, b *bindingEntry) {
	x.unbind(all, key)
	all[key] = b
	bySubject := x.subjects(b.namespace, true)
	b.keys = make([]subjectKey, len(b.subjects))
	for i, s := range b.subjects {
		k, ok := keyOf(s, b.namespace)
		if !ok {
			continue
		}
		b.keys[i] = k
		list := bySubject[k]
		if slices.Contains(list, b) {
			continue // a subject named twice
		}
		at, _ := slices.BinarySearchFunc(list, b.name, func(e *bindingEntry, name string) int { return strings.Compare(e.name, name) })
		bySubject[k] = slices.Insert(list, at, b)
	}
}

func (x *Index) unbind(all map[string]*bindingEntry, key string) {
	old, ok := all[key]
	if !ok {
		return
	}
	delete(all, key)
	bySubject := x.subjects(old.namespace, false)
	for _, k := range old.keys {
		if k == (subjectKey{}) {
			continue
		}
		list := slices.DeleteFunc(bySubject[k], func(e *bindingEntry) bool { return e == old })
		if len(list) == 0 {
			delete(bySubject, k)
		} else {
			bySubject[k] = list
		}
	}
}

// subjects is the subject index of namespace ("" for cluster role bindings).
func (x *Index) subjects(namespace string, create bool) map[subjectKey][]*bindingEntry {
	if namespace == "" {
		return x.clusterBySubject
	}
	m := x.bySubject[namespace]
	if m == nil && create {
		m = map[subjectKey][]*bindingEntry{}
		x.bySubject[namespace] = m
	}
	return m
}

// keyOf is the user or group a subject names. A service account is the user it authenticates as,
// in the binding's namespace when the subject names none; a cluster role binding's service account
// without a namespace, and an unknown kind, match nobody.
func keyOf(s rbacv1.Subject, bindingNamespace string) (subjectKey, bool) {
	switch s.Kind {
	case rbacapi.UserKind:
		return subjectKey{name: s.Name}, true
	case rbacapi.GroupKind:
		return subjectKey{group: true, name: s.Name}, true
	case rbacapi.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return subjectKey{}, false
		}
		return subjectKey{name: serviceaccount.Username(ns, s.Name)}, true
	}
	return subjectKey{}, false
}

// Source says which binding a rule came from, as Kubernetes words it in an allowed request's reason.
type Source struct {
	b       *bindingEntry
	subject int
}

func (s Source) String() string {
	b := s.b
	subj := b.subjects[s.subject]
	who := fmt.Sprintf("%s %q", subj.Kind, subj.Name)
	if subj.Kind == rbacapi.ServiceAccountKind {
		ns := subj.Namespace
		if ns == "" {
			ns = b.namespace
		}
		who = fmt.Sprintf("%s %q", subj.Kind, subj.Name+"/"+ns)
	}
	name := b.name
	if b.namespace != "" {
		name = b.name + "/" + b.namespace
	}
	return fmt.Sprintf("%s %q of %s %q to %s", b.kind, name, b.roleRef.Kind, b.roleRef.Name, who)
}

// visit calls visitor with each rule (its groups canonical) that applies to user in namespace:
// first those of the cluster role bindings naming the user or one of its groups, then those of the
// role bindings in namespace. A binding whose role is missing is reported as an error. visitor
// returns false to stop.
func (x *Index) visit(user *authn.UserInfo, namespace string, visitor func(src Source, rule *rbacv1.PolicyRule, err error) bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.visitSubjects(x.clusterBySubject, user, "", visitor) {
		return
	}
	if namespace != "" {
		if m := x.bySubject[namespace]; m != nil {
			x.visitSubjects(m, user, namespace, visitor)
		}
	}
}

func (x *Index) visitSubjects(bySubject map[subjectKey][]*bindingEntry, user *authn.UserInfo, namespace string, visitor func(Source, *rbacv1.PolicyRule, error) bool) bool {
	if len(bySubject) == 0 {
		return true
	}
	var seen []*bindingEntry // bindings naming the user more than once are followed once
	follow := func(k subjectKey) bool {
		for _, b := range bySubject[k] {
			if slices.Contains(seen, b) {
				continue
			}
			seen = append(seen, b)
			role, err := x.roleOf(b.roleRef, namespace)
			if err != nil {
				if !visitor(Source{}, nil, err) {
					return false
				}
				continue
			}
			src := Source{b: b, subject: slices.Index(b.keys, k)}
			for i := range role.rules {
				if !visitor(src, &role.rules[i], nil) {
					return false
				}
			}
		}
		return true
	}
	name := ""
	var userGroups []string
	if user != nil {
		name, userGroups = user.Name, user.Groups
	}
	if !follow(subjectKey{name: name}) {
		return false
	}
	for _, g := range userGroups {
		if !follow(subjectKey{group: true, name: g}) {
			return false
		}
	}
	return true
}

// roleOf is the role a binding in namespace ("" for a cluster role binding) refers to, or
// Kubernetes' NotFound text for it.
func (x *Index) roleOf(ref rbacv1.RoleRef, namespace string) (*roleEntry, error) {
	switch ref.Kind {
	case rbacapi.RoleKind:
		if r, ok := x.roles[namespace+"/"+ref.Name]; ok {
			return r, nil
		}
		return nil, fmt.Errorf("role.%s %q not found", rbacapi.GroupName, ref.Name)
	case rbacapi.ClusterRoleKind:
		if r, ok := x.clusterRoles[ref.Name]; ok {
			return r, nil
		}
		return nil, fmt.Errorf("clusterrole.%s %q not found", rbacapi.GroupName, ref.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// RoleRules are the rules of the role a binding in namespace ("" for a cluster role binding) names,
// their groups canonical: what binding it grants.
func (x *Index) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r, err := x.roleOf(ref, namespace)
	if err != nil {
		return nil, err
	}
	return r.rules, nil
}

// PolicyRules are every rule user holds in namespace ("" for the cluster scope), their groups
// canonical, and the errors of bindings whose role is missing: rules are only added, so those
// found still hold.
func (x *Index) PolicyRules(user *authn.UserInfo, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []string
	x.visit(user, namespace, func(_ Source, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		return true
	})
	if len(errs) > 0 {
		return rules, aggregate(errs)
	}
	return rules, nil
}

// aggregate is Kubernetes' utilerrors.NewAggregate text: one error as itself, more in brackets.
type aggregate []string

func (a aggregate) Error() string {
	if len(a) == 1 {
		return a[0]
	}
	return "[" + strings.Join(a, ", ") + "]"
}
