package iptables

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"
)

// fakeTables is iptables' behaviour for the commands the manager runs: -N (exit 1 when the chain
// exists), -C (exit 1 when the rule is missing), -I, -A and -S, over tables of chains of rules.
type fakeTables struct {
	chains map[string][]string // "table/chain" to its rules
	calls  []string
}

func newFakeTables() *fakeTables {
	f := &fakeTables{chains: map[string][]string{}}
	for _, c := range []string{"filter/INPUT", "filter/OUTPUT", "filter/FORWARD", "nat/POSTROUTING", "mangle/PREROUTING"} {
		f.chains[c] = nil
	}
	return f
}

func (f *fakeTables) exec(_ context.Context, args ...string) ([]byte, int, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	op, chain, table, rule := args[0], args[1], args[3], strings.Join(args[4:], " ")
	key := table + "/" + chain
	rules, exists := f.chains[key]
	switch op {
	case "-N":
		if exists {
			return []byte("iptables: Chain already exists."), 1, nil
		}
		f.chains[key] = nil
	case "-S":
		if !exists {
			return []byte("iptables: No chain/target/match by that name."), 1, nil
		}
	case "-C":
		if !exists || !slices.Contains(rules, rule) {
			return []byte("iptables: Bad rule (does a matching rule exist in that chain?)."), 1, nil
		}
	case "-I":
		f.chains[key] = append([]string{rule}, rules...)
	case "-A":
		f.chains[key] = append(rules, rule)
	}
	return nil, 0, nil
}

// flush is what a firewall reload does: every chain but the built-in ones gone, the rules too.
func (f *fakeTables) flush() {
	for key := range f.chains {
		if strings.HasPrefix(key[strings.Index(key, "/")+1:], "ORCH-") {
			delete(f.chains, key)
		} else {
			f.chains[key] = nil
		}
	}
}

// The kubelet's syncIPTablesRules: the hint chain in mangle; on IPv4 the firewall chain first in
// INPUT and OUTPUT with its localnet rule; nothing made twice when it exists.
func TestSync(t *testing.T) {
	v4, v6 := newFakeTables(), newFakeTables()
	for range 2 {
		if err := Sync(context.Background(), Family{Protocol: "IPv4", Exec: v4.exec}); err != nil {
			t.Fatal(err)
		}
		if err := Sync(context.Background(), Family{Protocol: "IPv6", Exec: v6.exec}); err != nil {
			t.Fatal(err)
		}
	}
	v4.chains["filter/INPUT"] = append(v4.chains["filter/INPUT"], "-j ACCEPT")
	local := "-m comment --comment block incoming localnet connections --dst 127.0.0.0/8 ! --src 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"
	for key, want := range map[string][]string{
		"mangle/ORCH-IPTABLES-HINT": nil,
		"filter/ORCH-FIREWALL":      {local},
		"filter/OUTPUT":             {"-j ORCH-FIREWALL"},
		"filter/INPUT":              {"-j ORCH-FIREWALL", "-j ACCEPT"},
	} {
		if got, ok := v4.chains[key]; !ok || !slices.Equal(got, want) {
			t.Errorf("IPv4 %s: %q (exists %v), want %q", key, got, ok, want)
		}
	}
	if _, ok := v6.chains["mangle/ORCH-IPTABLES-HINT"]; !ok {
		t.Error("IPv6 has no hint chain")
	}
	if _, ok := v6.chains["filter/ORCH-FIREWALL"]; ok || len(v6.chains["filter/INPUT"]) > 0 {
		t.Errorf("IPv6 got the localnet firewall: %v", v6.chains)
	}
}

// A command iptables refuses stops the sync, naming the chain and table.
func TestSyncFailure(t *testing.T) {
	refuse := func(context.Context, ...string) ([]byte, int, error) {
		return []byte("iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied"), 4, nil
	}
	err := Sync(context.Background(), Family{Protocol: "IPv4", Exec: refuse})
	if err == nil || !strings.Contains(err.Error(), `error creating chain "ORCH-IPTABLES-HINT" in table "mangle": exit status 4: iptables v1.8.9`) {
		t.Errorf("err = %v", err)
	}
}

// The canary, looked for every minute, brings the chains back after a flush.
func TestMonitorRemakesTheChainsAfterAFlush(t *testing.T) {
	tables := newFakeTables()
	clk := clock.NewMock()
	m := New(clk, klog.Background(), []Family{{Protocol: "IPv4", Exec: tables.exec}})
	ctx := context.Background()
	m.Start(ctx)
	for _, table := range []string{"mangle", "nat", "filter"} {
		if _, ok := tables.chains[table+"/ORCH-ORCHLET-CANARY"]; !ok {
			t.Fatalf("no canary in %s: %v", table, tables.chains)
		}
	}
	tables.flush()
	clk.Add(59 * time.Second)
	m.Step(ctx)
	if _, ok := tables.chains["filter/ORCH-FIREWALL"]; ok {
		t.Fatal("chains made again before the minute")
	}
	clk.Add(time.Second)
	if !m.NextDeadline().Equal(clk.Now()) {
		t.Fatalf("next deadline %v, want %v", m.NextDeadline(), clk.Now())
	}
	m.Step(ctx)
	if got := tables.chains["filter/INPUT"]; !slices.Equal(got, []string{"-j ORCH-FIREWALL"}) {
		t.Errorf("INPUT after the flush and a minute: %q", got)
	}
	if _, ok := tables.chains["nat/ORCH-ORCHLET-CANARY"]; !ok {
		t.Error("the canaries were not made again")
	}
	// With the canary there, a minute later nothing is run but the look for it.
	before := len(tables.calls)
	clk.Add(time.Minute)
	m.Step(ctx)
	if got := tables.calls[before:]; !slices.Equal(got, []string{"-S ORCH-ORCHLET-CANARY -t mangle"}) {
		t.Errorf("calls with the canary in place: %q", got)
	}
}
