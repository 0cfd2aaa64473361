package authz

import (
	"fmt"
	"strings"
)

// The values of --authorization-mode.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// ModeFlag is the name of the flag the modes come from; errors of New name it.
const ModeFlag = "--authorization-mode"

// ModeNames returns the modes New accepts, in the order help text should list them.
func ModeNames() []string {
	return []string{ModeAlwaysAllow, ModeAlwaysDeny}
}

// New returns the authorizer of an --authorization-mode value. The value may name one mode or, as
// for the Kubernetes API server, a comma-separated ordered list of modes, which are asked in order
// (see Union). Mode names are case-sensitive. An empty value, an unknown mode or a mode listed
// twice is an error naming the flag and the allowed values.
func New(mode string) (Authorizer, error) {
	allowed := strings.Join(ModeNames(), ", ")
	if strings.TrimSpace(mode) == "" {
		return nil, fmt.Errorf("%s: a mode is required; allowed values: %s", ModeFlag, allowed)
	}
	var list []Authorizer
	seen := map[string]bool{}
	for _, name := range strings.Split(mode, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("%s: mode %q is listed more than once", ModeFlag, name)
		}
		seen[name] = true
		switch name {
		case ModeAlwaysAllow:
			list = append(list, AlwaysAllow())
		case ModeAlwaysDeny:
			list = append(list, AlwaysDeny())
		default:
			return nil, fmt.Errorf("%s: unknown mode %q; allowed values: %s", ModeFlag, name, allowed)
		}
	}
	if len(list) == 1 {
		return list[0], nil
	}
	return Union(list...), nil
}
