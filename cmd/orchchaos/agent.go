package main

// The agent mode (--agent): orchlet, standalone with a static pod directory or in API-server mode
// with its pods from orch-apiserver (--api-mode), on a real CRI runtime, killed with SIGKILL at
// seeded random moments while its pods start and while they are deleted, restarted on the same
// root directory, and judged by the runtime's own lists (and by the API's pod statuses).

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/freeport"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/fakecri"
	"orch.io/orch/sim/converge"
)

// agentNode is the node name the agent runs under: its static pods are named <pod>-chaos-agent,
// which is how this mode tells its own sandboxes from anything else on the runtime.
const agentNode = "chaos-agent"

// podLogsDir is where orchlet writes the pods' logs (Kubernetes' default; orchlet has no flag).
const podLogsDir = "/var/log/pods"

type agentOptions struct {
	orchlet, endpoint, image string
	pods                     int
	converge                 time.Duration
	// api runs the agent in API-server mode on orch-apiserver (options.apiserver), its pods made
	// and deleted through the API.
	api bool
}

// agentTotal is the campaign's figures.
type agentTotal struct {
	kills, converged         int
	leaked, doubled, missing int
	// remade and rerun are the pods and containers running before a kill that the restarted
	// agent replaced rather than adopted.
	remade, rerun int
	// notReady, lingering and restarted are the API's view in API-server mode: pods that should
	// run not Running and Ready, deleted pods still there, containers whose restart count grew;
	// restartedUnstarted are the restarts of containers a kill found created and not started
	// (apiDifference), counted apart and not a failure.
	notReady, lingering, restarted, restartedUnstarted int
	longestConverge, totalConverge                     time.Duration
	cleanedSandboxes, cleanedFailed                    int
}

func (t agentTotal) OK() bool {
	return t.converged == t.kills && t.leaked+t.doubled+t.missing+t.remade+t.rerun+t.notReady+t.lingering+t.restarted == 0 && t.cleanedFailed == 0
}

func agentVerdictWord(t agentTotal) string {
	if t.OK() {
		return "PASS"
	}
	return "FAIL"
}

// runAgent does the kills: odd ones while every pod without a running copy is written (all of
// them the first time), even ones while a seeded third of the pods are deleted; after each
// restart the runtime must reach exactly the pods that should run within a.converge, and in
// API-server mode the API must show them Running and Ready and the deleted ones gone. Every
// sandbox of the agent's node is stopped and removed at the end, whatever happened.
func runAgent(ctx context.Context, o options, a agentOptions, out io.Writer) (total agentTotal, err error) {
	rng := rand.New(rand.NewSource(o.seed))
	rs, is, err := pods.Connect(ctx, a.endpoint, "", 10*time.Second)
	if err != nil {
		return total, fmt.Errorf("--container-runtime-endpoint %s: %w", a.endpoint, err)
	}
	img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: a.image}, false)
	if err != nil {
		return total, fmt.Errorf("--image %s: %w", a.image, err)
	}
	if img.GetImage() == nil {
		return total, fmt.Errorf("--image %s is not on the runtime (the pods pull nothing: import it first)", a.image)
	}
	if n, err := clearNode(ctx, rs, a.endpoint, out); err != nil || n > 0 {
		fmt.Fprintf(out, "removed %d sandboxes an earlier run left (%v)\n", n, err)
	}
	defer func() {
		n, cerr := clearNode(context.Background(), rs, a.endpoint, out)
		total.cleanedSandboxes = n
		if cerr != nil {
			total.cleanedFailed++
			fmt.Fprintln(out, "cleaning the runtime:", cerr)
		} else {
			fmt.Fprintf(out, "removed the %d sandboxes of node %s from the runtime, their containers with them\n", n, agentNode)
		}
		removePodLogs()
	}()

	var src podSource
	if a.api {
		src, err = newAPISource(ctx, o.apiserver, o.dataDir, a.image)
	} else {
		src, err = newStaticSource(o.dataDir, a.image)
	}
	if err != nil {
		return total, err
	}
	defer src.stop()
	ag, err := newAgentProcess(a.orchlet, a.endpoint, src.args(), o.dataDir)
	if err != nil {
		return total, err
	}
	defer ag.kill()

	names := make([]string, a.pods)
	for i := range names {
		names[i] = fmt.Sprintf("chaos%03d", i)
	}
	present := map[string]bool{}
	// unstarted are the UIDs of the pods any kill found with a container created and not started;
	// restarts are counted once each, by pod UID, container and count.
	unstarted, restarts, unstartedRestarts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	mode := "standalone, static pods"
	if a.api {
		mode = "in API-server mode, pods through orch-apiserver"
	}
	fmt.Fprintf(out, "orchlet %s, on %s, root directory %s, %d pods of %s, seed %d\n", mode, a.endpoint, o.dataDir, a.pods, a.image, o.seed)
	start := time.Now()
	if err := ag.start(ctx); err != nil {
		return total, err
	}
	for k := 1; k <= o.kills; k++ {
		var what string
		changed := make(chan error, 1)
		if k%2 == 1 {
			var add []string
			for _, n := range names {
				if !present[n] {
					add = append(add, n)
					present[n] = true
				}
			}
			go func() { changed <- src.add(ctx, add) }()
			what = fmt.Sprintf("while %d pods start", len(add))
		} else {
			var del []string
			for _, i := range rng.Perm(len(names))[:len(names)/3] {
				del = append(del, names[i])
				delete(present, names[i])
			}
			go func() { changed <- src.remove(ctx, del) }()
			what = fmt.Sprintf("while %d pods are deleted", len(del))
		}
		up := time.Duration(rng.Int63n(int64(o.maxUp))) + 200*time.Millisecond
		time.Sleep(up)
		before, err := nodeState(ctx, rs)
		if err != nil {
			return total, err
		}
		sandboxes, containers := readyRunning(before)
		ag.kill()
		// What the kill left, read before the restart: a container may have been created after
		// the reading before it.
		left, err := nodeState(ctx, rs)
		if err != nil {
			return total, err
		}
		for _, st := range []fakecri.State{before, left} {
			for uid := range createdNotStarted(st) {
				unstarted[uid] = true
			}
		}
		if err := ag.start(ctx); err != nil {
			return total, fmt.Errorf("restart after kill %d: %w", k, err)
		}
		restarted := time.Now()
		if err := <-changed; err != nil {
			return total, fmt.Errorf("kill %d %s: %w", k, what, err)
		}
		want := map[string][]string{}
		for n := range present {
			want["default/"+apiName(n)] = []string{"sleeper"}
		}
		var d converge.Difference
		var api apiDifference
		var remade, rerun int
		for {
			st, err := nodeState(ctx, rs)
			if err != nil {
				return total, err
			}
			d = converge.Differences(st, want)
			pods, containers := converge.Replaced(before, st, want)
			remade, rerun = len(pods), len(containers)
			if api, err = src.judge(ctx, present, unstarted); err != nil {
				return total, err
			}
			if (d.None() && api.Converged()) || time.Since(restarted) > a.converge {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		took := time.Since(restarted)
		total.kills = k
		total.remade += remade
		total.rerun += rerun
		for _, r := range api.Restarted {
			if !restarts[r] {
				restarts[r] = true
				fmt.Fprintf(out, "kill %d: restarted: %s\n", k, r)
			}
		}
		for _, r := range api.RestartedUnstarted {
			if !unstartedRestarts[r] {
				unstartedRestarts[r] = true
				fmt.Fprintf(out, "kill %d: restarted, created and not started at the kill: %s\n", k, r)
			}
		}
		total.restarted, total.restartedUnstarted = len(restarts), len(unstartedRestarts)
		if !d.None() || !api.Converged() {
			total.leaked, total.doubled, total.missing = len(d.Leaked), len(d.Doubled), len(d.Missing)
			total.notReady, total.lingering = len(api.NotReady), len(api.Lingering)
			fmt.Fprintf(out, "kill %d %s, after %v (%d sandboxes ready, %d containers running): not converged %v after the restart: leaked %d, doubled %d, missing %d; in the API not Running and Ready %d, deleted still there %d\n",
				k, what, up.Round(time.Millisecond), sandboxes, containers, a.converge, total.leaked, total.doubled, total.missing, total.notReady, total.lingering)
			for i, p := range slices10(d, api) {
				fmt.Fprintf(out, "   %d: %s\n", i+1, p)
			}
			fmt.Fprintln(out, "orchlet's log (last 4000 bytes):\n"+ag.logTail(4000))
			break
		}
		total.converged = k
		total.totalConverge += took
		total.longestConverge = max(total.longestConverge, took)
		inAPI := ""
		if a.api {
			inAPI = fmt.Sprintf(", Running and Ready in the API, the deleted gone, %d containers restarted (%d created and not started at a kill)",
				len(api.Restarted)+len(api.RestartedUnstarted), len(api.RestartedUnstarted))
		}
		fmt.Fprintf(out, "kill %d %s, after %v (%d sandboxes ready, %d containers running): converged %v after the restart, %d pods each running once%s; of those running before, %d pods made again, %d containers run again\n",
			k, what, up.Round(time.Millisecond), sandboxes, containers, took.Round(10*time.Millisecond), len(want), inAPI, remade, rerun)
	}
	ag.kill()
	mean := time.Duration(0)
	if total.converged > 0 {
		mean = total.totalConverge / time.Duration(total.converged)
	}
	inAPI := ""
	if a.api {
		inAPI = fmt.Sprintf(", in the API not Running and Ready %d, deleted still there %d, containers restarted %d (and %d created and not started at a kill)",
			total.notReady, total.lingering, total.restarted, total.restartedUnstarted)
	}
	fmt.Fprintf(out, "total: %d kills in %v, %d of them converged (longest %v, mean %v after the restart), leaked %d, doubled %d, missing %d, pods made again %d, containers run again %d%s: %s\n",
		total.kills, time.Since(start).Round(time.Second), total.converged, total.longestConverge.Round(10*time.Millisecond), mean.Round(10*time.Millisecond), total.leaked, total.doubled, total.missing, total.remade, total.rerun, inAPI, agentVerdictWord(total))
	return total, nil
}

func slices10(d converge.Difference, api apiDifference) []string {
	all := append(append(append([]string{}, d.Leaked...), d.Doubled...), d.Missing...)
	all = append(append(all, api.NotReady...), api.Lingering...)
	return all[:min(10, len(all))]
}

// nodeState reads the runtime's sandboxes of the agent's node and their containers, as crictl
// pods and crictl ps -a list them, into the shape converge.Differences judges.
func nodeState(ctx context.Context, rs cri.RuntimeService) (fakecri.State, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sbs, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return fakecri.State{}, fmt.Errorf("ListPodSandbox: %w", err)
	}
	ctrs, err := rs.ListContainers(ctx, nil)
	if err != nil {
		return fakecri.State{}, fmt.Errorf("ListContainers: %w", err)
	}
	var st fakecri.State
	ours := map[string]bool{}
	for _, sb := range sbs {
		if !strings.HasSuffix(sb.GetMetadata().GetName(), "-"+agentNode) {
			continue
		}
		ours[sb.Id] = true
		st.Sandboxes = append(st.Sandboxes, fakecri.SandboxState{ID: sb.Id, Name: sb.Metadata.Name, Namespace: sb.Metadata.Namespace,
			UID: sb.Metadata.Uid, Attempt: sb.Metadata.Attempt, State: sb.State.String()})
	}
	for _, c := range ctrs {
		if !ours[c.PodSandboxId] {
			continue
		}
		st.Containers = append(st.Containers, fakecri.ContainerState{ID: c.Id, SandboxID: c.PodSandboxId, Name: c.GetMetadata().GetName(),
			Attempt: c.GetMetadata().GetAttempt(), State: c.State.String()})
	}
	return st, nil
}

// readyRunning counts the node's ready sandboxes and running containers: how far the agent got when
// it is killed.
func readyRunning(st fakecri.State) (ready, running int) {
	for _, sb := range st.Sandboxes {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY.String() {
			ready++
		}
	}
	for _, c := range st.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING.String() {
			running++
		}
	}
	return ready, running
}

// clearNode stops and removes every sandbox of the agent's node (their containers with them),
// 8 at a time, up to three times, and checks none is left.
func clearNode(ctx context.Context, rs cri.RuntimeService, endpoint string, out io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	st, err := nodeState(ctx, rs)
	if err != nil {
		return 0, err
	}
	left := st
	// containerd now and then fails a removal whose runc delete did not end ("runc did not
	// terminate successfully"); the kubelet's garbage collector tries again, and so does this.
	// A task containerd stranded (a start the agent's kill cut short) no CRI call removes: the
	// last try deletes those first with containerd's own client.
	for try := range 3 {
		if try == 2 && len(left.Containers) > 0 {
			ids := make([]string, len(left.Containers))
			for i, c := range left.Containers {
				ids[i] = c.ID
			}
			n, err := apptest.DeleteStrandedTasks(ctx, rs, endpoint, ids)
			if n > 0 {
				fmt.Fprintf(out, "containerd kept the tasks of %d containers CRI could not remove; deleted them with ctr task delete --force\n", n)
			}
			if err != nil {
				fmt.Fprintln(out, "deleting the tasks containerd kept:", err)
			}
		}
		var ids []string
		for _, sb := range left.Sandboxes {
			ids = append(ids, sb.ID)
		}
		apptest.RemoveSandboxes(ctx, rs, ids)
		if left, err = nodeState(ctx, rs); err != nil {
			return len(st.Sandboxes), err
		}
		if len(left.Sandboxes)+len(left.Containers) == 0 {
			break
		}
	}
	if len(left.Sandboxes)+len(left.Containers) > 0 {
		return len(st.Sandboxes), fmt.Errorf("%d sandboxes and %d containers of node %s left after removing them", len(left.Sandboxes), len(left.Containers), agentNode)
	}
	return len(st.Sandboxes), nil
}

// removePodLogs removes the log directories the agent's pods left.
func removePodLogs() {
	dirs, _ := filepath.Glob(filepath.Join(podLogsDir, "default_*-"+agentNode+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// placeManifests writes each pod's manifest into staging and renames it into the manifest
// directory, so that the agent never reads half a file.
func placeManifests(staging, manifests string, names []string, image string) error {
	for _, n := range names {
		m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: sleeper, image: %s, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`, n, image)
		if err := os.WriteFile(filepath.Join(staging, n+".yaml"), []byte(m), 0o644); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(staging, n+".yaml"), filepath.Join(manifests, n+".yaml")); err != nil {
			return err
		}
	}
	return nil
}

// agentProcess is orchlet as a child process, started again on the same root directory, ports
// and log file after each kill.
type agentProcess struct {
	args    []string
	bin     string
	logPath string
	healthz string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func newAgentProcess(bin, endpoint string, source []string, dir string) (*agentProcess, error) {
	var ports [2]int
	for i := range ports {
		p, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	healthz := strconv.Itoa(ports[1])
	return &agentProcess{
		bin: bin, logPath: filepath.Join(dir, "orchlet.log"), healthz: healthz,
		args: append([]string{"--container-runtime-endpoint=" + endpoint,
			"--hostname-override=" + agentNode, "--root-dir=" + filepath.Join(dir, "root"), "--cert-dir=" + filepath.Join(dir, "certs"),
			"--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable=", "--cgroup-driver=cgroupfs",
			// The campaign judges kills: a shared machine's disk near the default thresholds must
			// neither refuse its pods under DiskPressure nor collect its image.
			"--eviction-hard=memory.available<1Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%", "--image-gc-high-threshold=100",
			"--address=127.0.0.1", "--port=" + strconv.Itoa(ports[0]), "--read-only-port=0",
			"--healthz-bind-address=127.0.0.1", "--healthz-port=" + healthz}, source...),
	}, nil
}

// start runs orchlet and waits for its /healthz.
func (a *agentProcess) start(ctx context.Context) error {
	log, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	a.cmd = exec.CommandContext(ctx, a.bin, a.args...)
	a.cmd.Stdout, a.cmd.Stderr = log, log
	if err := a.cmd.Start(); err != nil {
		return err
	}
	a.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(a.cmd, a.exited)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-a.exited:
			return fmt.Errorf("orchlet exited at start:\n%s", a.logTail(2000))
		default:
		}
		if resp, err := client.Get("http://127.0.0.1:" + a.healthz + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			a.kill()
			return fmt.Errorf("orchlet not healthy within 60 s:\n%s", a.logTail(2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (a *agentProcess) kill() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	a.cmd = nil
}

func (a *agentProcess) logTail(n int) string {
	b, _ := os.ReadFile(a.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// mainAgent runs the agent mode and exits as main does: 1 when the runtime did not converge, or
// something was leaked, doubled, missing or replaced, 2 when it could not run. A --data-dir given
// is kept, orchlet's log in it.
func mainAgent(o options, a agentOptions, temporary bool) {
	if a.endpoint == "" || a.image == "" || a.pods < 3 || a.converge <= 0 {
		fmt.Fprintln(os.Stderr, "orchchaos: --agent needs --container-runtime-endpoint, --image, --pods of at least 3 and a positive --converge-within")
		os.Exit(2)
	}
	total, err := runAgent(context.Background(), o, a, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orchchaos:", err)
		if temporary {
			os.RemoveAll(o.dataDir)
		}
		os.Exit(2)
	}
	if !total.OK() {
		if temporary {
			os.RemoveAll(o.dataDir)
		}
		os.Exit(1)
	}
}
