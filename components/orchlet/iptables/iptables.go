package iptables

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"

	"orch.io/orch/components/periodic"
)

// The chains, Kubernetes' KUBE-IPTABLES-HINT, KUBE-FIREWALL and KUBE-KUBELET-CANARY renamed.
const (
	HintChain     = "ORCH-IPTABLES-HINT"
	FirewallChain = "ORCH-FIREWALL"
	CanaryChain   = "ORCH-ORCHLET-CANARY"
)

// monitorPeriod is how often the canary is looked for, as the kubelet looks.
const monitorPeriod = time.Minute

// canaryTables are where the canary is made; the first is the one looked at.
var canaryTables = []string{"mangle", "nat", "filter"}

// localnetRule drops what reaches 127.0.0.0/8 from elsewhere unless conntrack says it belongs to
// a connection or was DNATed there.
var localnetRule = []string{"-m", "comment", "--comment", "block incoming localnet connections",
	"--dst", "127.0.0.0/8", "!", "--src", "127.0.0.0/8", "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP"}

// Exec runs one iptables command: its combined output and exit status; err when it could not run.
type Exec func(ctx context.Context, args ...string) (out []byte, status int, err error)

// Family is one protocol's iptables.
type Family struct {
	// Protocol is IPv4 or IPv6; IPv6 gets the hint chain only.
	Protocol string
	Exec     Exec
}

// Command is an Exec of a program (iptables, ip6tables), waiting up to 5s for the xtables lock.
func Command(program string) Exec {
	return func(ctx context.Context, args ...string) ([]byte, int, error) {
		out, err := exec.CommandContext(ctx, program, append([]string{"-w", "5"}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, ee.ExitCode(), nil
		}
		if err != nil {
			return out, -1, err
		}
		return out, 0, nil
	}
}

// HostFamilies are the protocols whose iptables this host has, as the kubelet's NewBestEffort
// finds them: the program on PATH and its nat table's POSTROUTING chain listed.
func HostFamilies(ctx context.Context) []Family {
	var out []Family
	for _, f := range []struct{ protocol, program string }{{"IPv4", "iptables"}, {"IPv6", "ip6tables"}} {
		if _, err := exec.LookPath(f.program); err != nil {
			continue
		}
		run := Command(f.program)
		if _, status, err := run(ctx, "-S", "POSTROUTING", "-t", "nat"); err != nil || status != 0 {
			continue
		}
		out = append(out, Family{Protocol: f.protocol, Exec: run})
	}
	return out
}

// Manager keeps the chains of each family.
type Manager struct {
	clk      clock.Clock
	log      klog.Logger
	families []Family
	next     time.Time
}

// New is a manager of families' chains.
func New(clk clock.Clock, log klog.Logger, families []Family) *Manager {
	return &Manager{clk: clk, log: log, families: families}
}

// Start makes the chains and the canaries, logging, as the kubelet, what it could not make.
func (m *Manager) Start(ctx context.Context) {
	if len(m.families) == 0 {
		m.log.Info("No iptables support on this system; not creating the " + HintChain + " chain")
		return
	}
	for _, f := range m.families {
		if err := Sync(ctx, f); err != nil {
			m.log.Error(err, "Failed to initialize iptables rules; some functionality may be missing.", "protocol", f.Protocol)
			continue
		}
		m.log.Info("Initialized iptables rules.", "protocol", f.Protocol)
		m.canaries(ctx, f)
	}
	m.next = m.clk.Now().Add(monitorPeriod)
}

func (m *Manager) canaries(ctx context.Context, f Family) {
	for _, table := range canaryTables {
		if err := ensureChain(ctx, f, table, CanaryChain); err != nil {
			m.log.Error(err, "Could not set up iptables canary", "table", table, "chain", CanaryChain)
		}
	}
}

// Step looks for each family's canary in the mangle table; one gone means the tables were flushed:
// the chains are made again, and the canaries.
func (m *Manager) Step(ctx context.Context) {
	if m.clk.Now().Before(m.next) {
		return
	}
	for _, f := range m.families {
		if _, status, err := f.Exec(ctx, "-S", CanaryChain, "-t", canaryTables[0]); err != nil || status == 0 {
			continue
		}
		m.log.V(2).Info("IPTables canary deleted", "table", canaryTables[0], "chain", CanaryChain, "protocol", f.Protocol)
		if err := Sync(ctx, f); err != nil {
			m.log.Error(err, "Failed to ensure iptables rules", "protocol", f.Protocol)
		}
		m.canaries(ctx, f)
	}
	m.next = m.clk.Now().Add(monitorPeriod)
}

// NextDeadline is when Step looks next.
func (m *Manager) NextDeadline() time.Time { return m.next }

// Run keeps the chains until ctx ends; with no family there is nothing to keep.
func (m *Manager) Run(ctx context.Context) error {
	if len(m.families) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	return periodic.Run(ctx, m.clk, m.Step, m.NextDeadline)
}

// Sync is the kubelet's syncIPTablesRules for one family.
func Sync(ctx context.Context, f Family) error {
	if err := ensureChain(ctx, f, "mangle", HintChain); err != nil {
		return err
	}
	if f.Protocol == "IPv6" {
		return nil // IPv6 has no route_localnet
	}
	if err := ensureChain(ctx, f, "filter", FirewallChain); err != nil {
		return err
	}
	for _, chain := range []string{"OUTPUT", "INPUT"} {
		if err := ensureRule(ctx, f, "-I", "filter", chain, "-j", FirewallChain); err != nil {
			return err
		}
	}
	return ensureRule(ctx, f, "-A", "filter", FirewallChain, localnetRule...)
}

// ensureChain makes the chain; exit status 1 says it exists.
func ensureChain(ctx context.Context, f Family, table, chain string) error {
	out, status, err := f.Exec(ctx, "-N", chain, "-t", table)
	if err == nil && (status == 0 || status == 1) {
		return nil
	}
	return chainError("creating", chain, table, out, status, err)
}

// ensureRule checks for the rule and, when it is missing, inserts it first (-I) or appends it (-A).
func ensureRule(ctx context.Context, f Family, position, table, chain string, rule ...string) error {
	out, status, err := f.Exec(ctx, append([]string{"-C", chain, "-t", table}, rule...)...)
	if err == nil && status == 0 {
		return nil
	}
	if err == nil && status == 1 {
		out, status, err = f.Exec(ctx, append([]string{position, chain, "-t", table}, rule...)...)
		if err == nil && status == 0 {
			return nil
		}
	}
	return chainError("adding a rule to", chain, table, out, status, err)
}

func chainError(what, chain, table string, out []byte, status int, err error) error {
	if err != nil {
		return fmt.Errorf("error %s chain %q in table %q: %w: %s", what, chain, table, err, out)
	}
	return fmt.Errorf("error %s chain %q in table %q: exit status %d: %s", what, chain, table, status, out)
}
