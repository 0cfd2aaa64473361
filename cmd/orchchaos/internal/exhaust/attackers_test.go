package exhaust

import (
	"strings"
	"testing"
)

func TestParseAttackers(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "all", want: "all"},
		{in: "watch-storm", want: "watch-storm"},
		{in: "big-headers, watch-storm", want: "big-headers,watch-storm"},
		{in: "watch-storm,slow-bodies", want: "slow-bodies,watch-storm"},
		{in: "-watch-storm", want: "slow-bodies,unread-lists,big-headers,big-bodies"},
		{in: "-watch-storm,-big-headers", want: "slow-bodies,unread-lists,big-bodies"},
		{in: "slow-bodies,unread-lists,big-headers,big-bodies,watch-storm", want: "all"},
		{in: "-slow-bodies,-unread-lists,-big-headers,-big-bodies,-watch-storm", want: "none"},
		{in: "storm", err: `unknown attacker "storm"`},
		{in: "watch-storm,-tls", err: `unknown attacker "tls"`},
		{in: "watch-storm,-big-headers", err: "not both"},
		{in: "", err: "an empty name"},
		{in: "watch-storm,", err: "an empty name"},
	} {
		got, err := ParseAttackers(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
