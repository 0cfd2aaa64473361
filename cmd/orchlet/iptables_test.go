//go:build e2e

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/orchlet/app/apptest"
)

// TestStandaloneIPTablesChainsInANetworkNamespace runs the agent in a network namespace of its own
// and reads its iptables back there: the hint chain in mangle, the firewall chain first in INPUT
// and OUTPUT with its localnet rule, and the canaries; with --make-iptables-util-chains=false,
// none of them. It needs root, ip and iptables.
func TestStandaloneIPTablesChainsInANetworkNamespace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		chain bool
	}{
		{"default", nil, true},
		{"off", []string{"--make-iptables-util-chains=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("orch-e2e-%d-%s", os.Getpid(), tc.name)
			if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add: %v\n%s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
			inNS := func(args ...string) string {
				out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			inNS("ip", "link", "set", "lo", "up")

			args := append([]string{"netns", "exec", ns, binary}, apptest.WithRuntime(t, append([]string{"--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable="}, tc.args...)...)...)
			cmd := exec.Command("ip", args...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			started := make(chan string, 1)
			go func() {
				var log strings.Builder
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					log.WriteString(sc.Text() + "\n")
					if strings.Contains(sc.Text(), "orchlet started") {
						started <- log.String()
					}
				}
				started <- log.String()
			}()
			var log string
			select {
			case log = <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("no start line")
			}
			filter, mangle := inNS("iptables", "-w", "5", "-S", "-t", "filter"), inNS("iptables", "-w", "5", "-S", "-t", "mangle")
			for _, want := range []string{
				"-N ORCH-FIREWALL",
				"-A INPUT -j ORCH-FIREWALL",
				"-A OUTPUT -j ORCH-FIREWALL",
				`-A ORCH-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`,
				"-N ORCH-ORCHLET-CANARY",
			} {
				if strings.Contains(filter, want) != tc.chain {
					t.Errorf("filter table has %q: %v, want %v:\n%s\nagent:\n%s", want, !tc.chain, tc.chain, filter, log)
				}
			}
			if strings.Contains(mangle, "-N ORCH-IPTABLES-HINT") != tc.chain {
				t.Errorf("mangle table:\n%s\nwant the hint chain: %v", mangle, tc.chain)
			}
			if tc.chain && !strings.Contains(log, `"Initialized iptables rules." protocol="IPv4"`) {
				t.Errorf("the agent did not say it initialized the rules:\n%s", log)
			}
		})
	}
}
