package authz

import (
	"errors"
	"fmt"
	"strings"
)

// The values of --authorization-mode.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
)

// ModeFlag is the name of the flag the modes come from; errors of New name it.
const ModeFlag = "--authorization-mode"

// ModeNames returns the modes New accepts, in the order help text should list them.
func ModeNames() []string {
	return []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC}
}

// ParseModes checks an --authorization-mode value and returns its modes in order. The value may
// name one mode or, as for the Kubernetes API server, a comma-separated ordered list of modes.
// Mode names are case-sensitive. An empty value, an unknown mode or a mode listed twice is an
// error naming the flag and the allowed values.
func ParseModes(mode string) ([]string, error) {
	allowed := strings.Join(ModeNames(), ", ")
	if strings.TrimSpace(mode) == "" {
		return nil, fmt.Errorf("%s: a mode is required; allowed values: %s", ModeFlag, allowed)
	}
	var modes []string
	seen := map[string]bool{}
	for _, name := range strings.Split(mode, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("%s: mode %q is listed more than once", ModeFlag, name)
		}
		seen[name] = true
		switch name {
		case ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC:
			modes = append(modes, name)
		default:
			return nil, fmt.Errorf("%s: unknown mode %q; allowed values: %s", ModeFlag, name, allowed)
		}
	}
	return modes, nil
}

// New returns the authorizer of an --authorization-mode value (see ParseModes); a list is asked
// in order (see Union). pods is what mode Node reads pods with; it is required with that mode.
// refs, when set, lets mode Node read the configmaps and secrets of a node's pods. rbac is the
// authorizer of mode RBAC (package authz/rbac's, over the server's roles and bindings); it is
// required with that mode.
func New(mode string, pods PodGetter, refs ObjectRefs, rbac Authorizer) (Authorizer, error) {
	modes, err := ParseModes(mode)
	if err != nil {
		return nil, err
	}
	list := make([]Authorizer, len(modes))
	for i, name := range modes {
		switch name {
		case ModeAlwaysAllow:
			list[i] = AlwaysAllow()
		case ModeAlwaysDeny:
			list[i] = AlwaysDeny()
		case ModeNode:
			if pods == nil {
				return nil, errors.New("authz: mode Node needs the API server's pods")
			}
			list[i] = NodeWithObjects(pods, refs)
		case ModeRBAC:
			if rbac == nil {
				return nil, errors.New("authz: mode RBAC needs the API server's roles and bindings")
			}
			list[i] = rbac
		}
	}
	if len(list) == 1 {
		return list[0], nil
	}
	return Union(list...), nil
}
