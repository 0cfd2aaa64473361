package exhaust

import (
	"fmt"
	"slices"
	"strings"
)

// The exhaustion campaign's kinds of attacker, by the names --attackers takes, in the order the
// campaign starts them: each can be run alone or left out, to find which one costs what.
const (
	attackSlowBodies  = "slow-bodies"  // creates whose body never finishes
	attackUnreadLists = "unread-lists" // lists whose answer is never read
	attackBigHeaders  = "big-headers"  // requests with a header twice the server's limit
	attackBigBodies   = "big-bodies"   // creates with a body over five times the server's limit
	attackWatchStorm  = "watch-storm"  // 2,000 watches opened at once
)

var AttackerNames = []string{attackSlowBodies, attackUnreadLists, attackBigHeaders, attackBigBodies, attackWatchStorm}

// Attackers is the attackers a campaign runs.
type Attackers map[string]bool

// ParseAttackers reads --attackers: "all", or names from AttackerNames joined by commas, each
// name possibly prefixed by "-" to leave it out of all ("-watch-storm": every attacker but the
// storm). Names and exclusions do not mix; an unknown name is refused by name.
func ParseAttackers(s string) (Attackers, error) {
	set := Attackers{}
	if strings.TrimSpace(s) == "all" {
		for _, a := range AttackerNames {
			set[a] = true
		}
		return set, nil
	}
	var named, excluded bool
	for _, field := range strings.Split(s, ",") {
		name := strings.TrimSpace(field)
		out := strings.HasPrefix(name, "-")
		name = strings.TrimPrefix(name, "-")
		if name == "" {
			return nil, fmt.Errorf("--attackers %q: an empty name", s)
		}
		if !slices.Contains(AttackerNames, name) {
			return nil, fmt.Errorf("--attackers: unknown attacker %q (known: all, %s)", name, strings.Join(AttackerNames, ", "))
		}
		if out {
			excluded = true
		} else {
			named = true
		}
		set[name] = !out
	}
	if named && excluded {
		return nil, fmt.Errorf("--attackers %q: either names to run or names to leave out (-name), not both", s)
	}
	if excluded {
		for _, a := range AttackerNames {
			if _, seen := set[a]; !seen {
				set[a] = true
			}
		}
		for a, on := range set {
			if !on {
				delete(set, a)
			}
		}
	}
	return set, nil
}

// String names the set's attackers in the campaign's order, or "all".
func (s Attackers) String() string {
	var names []string
	for _, a := range AttackerNames {
		if s[a] {
			names = append(names, a)
		}
	}
	if len(names) == len(AttackerNames) {
		return "all"
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
