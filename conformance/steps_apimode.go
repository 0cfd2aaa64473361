package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/conformance/target"
)

// apiModeSteps run the agent in API-server mode against the suite's API server and read what it
// publishes there: its Node, its Lease, and the pods bound to it.
func apiModeSteps() []StepDef {
	return []StepDef{
		{`^the agent runs in API-server mode with "([^"]*)"$`, func(w *World) any { return w.agentRunsAPIMode }},
		{`^the node is created through the API$`, func(w *World) any { return w.createNode }},
		{`^the API server has the agent's node$`, func(w *World) any { return w.hasNode }},
		{`^the API server never has the agent's node$`, func(w *World) any { return w.neverHasNode }},
		{`^the agent's node is (Ready)$`, func(w *World) any { return w.nodeReady }},
		{`^the agent's node has the label "([^"]*)"$`, func(w *World) any { return w.nodeLabel }},
		{`^the agent's node has the taint "([^"]*)"$`, func(w *World) any { return w.nodeTaint }},
		{`^the agent's node has the annotation "([^"]*)"$`, func(w *World) any { return w.nodeAnnotation }},
		{`^the agent's node has no annotation "([^"]*)"$`, func(w *World) any { return w.nodeNoAnnotation }},
		{`^the agent's node has no taints$`, func(w *World) any { return w.nodeNoTaints }},
		{`^the agent's node reports the (InternalIP|Hostname) address "([^"]*)"$`, func(w *World) any { return w.nodeAddress }},
		{`^the agent's node reports an InternalIP address of the host's default (IPv4) family$`, func(w *World) any { return w.nodeDefaultFamily }},
		{`^the agent's node reports only the Hostname address "([^"]*)"$`, func(w *World) any { return w.nodeOnlyHostname }},
		{`^the agent's node reports (\d+) images?$`, func(w *World) any { return w.nodeImages }},
		{`^the agent's node reports allocatable (cpu|memory) "([^"]*)" less than its capacity$`, func(w *World) any { return w.nodeAllocatable }},
		{`^the agent's node status is posted every (\d+) seconds$`, func(w *World) any { return w.nodeStatusEvery }},
		{`^the agent renews its lease in "([^"]*)"$`, func(w *World) any { return w.leaseRenewed }},
		{`^a pod "([^"]*)" bound to the agent's node is created through the API$`, func(w *World) any { return w.createBoundPod }},
		{`^the API server reports pod "([^"]*)" (Running)$`, func(w *World) any { return w.apiReportsPod }},
		{`^pod "([^"]*)" is deleted through the API$`, func(w *World) any { return w.deletePod }},
		{`^pod "([^"]*)" is gone from the API$`, func(w *World) any { return w.podGone }},
	}
}

// apiDo sends a request to the suite's API server with its token.
func (w *World) apiDo(method, path string, body any) (int, []byte, error) {
	client, err := w.t.APIServer()
	if err != nil {
		return 0, nil, err
	}
	return w.adminDo(client, w.t.URL(path), method, body)
}

// adminDo sends method to url through client as the profile's administrator, with body as JSON
// when not nil, and answers the status code and the body.
func (w *World) adminDo(client *http.Client, url, method string, body any) (int, []byte, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.t.Profile.APIServer.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	out, err := drain(resp.Body)
	return resp.StatusCode, out, err
}

func (w *World) apiGet(path string, into any) error {
	code, data, err := w.apiDo(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, data)
	}
	return json.Unmarshal(data, into)
}

// agentRunsAPIMode writes a kubeconfig for the suite's API server and runs the agent with it. The
// scenario's node, its lease and its pods are removed from the shared server when it ends.
func (w *World) agentRunsAPIMode(args string) error {
	if _, err := w.t.APIServer(); err != nil {
		return err
	}
	kubeconfig, err := w.writeKubeconfig("orchlet.conf", "suite", "agent", w.t.URL(""), w.t.Expand(w.t.Profile.APIServer.CAFile), w.t.Profile.APIServer.Token)
	if err != nil {
		return err
	}
	w.cleanupNode()
	return w.agentRuns(args + " --orchconfig=" + kubeconfig)
}

// cleanupNode removes, when the scenario ends, what an agent of it leaves on the shared server.
func (w *World) cleanupNode() {
	w.cleanup = append(w.cleanup, func() {
		_, _, _ = w.apiDo(http.MethodDelete, "/api/v1/nodes/"+nodeName, nil)
		_, _, _ = w.apiDo(http.MethodDelete, w.leasePath("orch-node-lease"), nil)
		_, _, _ = w.apiDo(http.MethodDelete, "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3D"+nodeName+"&gracePeriodSeconds=0", nil)
	})
}

func (w *World) createNode() error {
	w.cleanupNode()
	code, data, err := w.apiDo(http.MethodPost, "/api/v1/nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("creating node %s: %d %s", nodeName, code, data)
	}
	return nil
}

func (w *World) getNode() (*corev1.Node, error) {
	n := &corev1.Node{}
	return n, w.apiGet("/api/v1/nodes/"+nodeName, n)
}

// nodeEventually waits for the agent's node to satisfy check.
func (w *World) nodeEventually(check func(*corev1.Node) error) error {
	return eventually(target.CommandTimeout, func() error {
		n, err := w.getNode()
		if err != nil {
			return err
		}
		return check(n)
	})
}

func (w *World) hasNode() error { return w.nodeEventually(func(*corev1.Node) error { return nil }) }

func (w *World) neverHasNode() error {
	time.Sleep(3 * time.Second) // the agent has long tried to register by then
	if code, _, err := w.apiDo(http.MethodGet, "/api/v1/nodes/"+nodeName, nil); err != nil || code != http.StatusNotFound {
		return fmt.Errorf("node %s: %d %v, want 404", nodeName, code, err)
	}
	return nil
}

func (w *World) nodeReady(string) error {
	return w.nodeEventually(func(n *corev1.Node) error {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready: %+v", n.Name, n.Status.Conditions)
	})
}

// nodeLabel looks for a label whose key is SPEC.md's spelt with the agent's renames (orch.io/hostname
// is kubernetes.io/hostname on Kubernetes).
func (w *World) nodeLabel(label string) error {
	k, v, _ := strings.Cut(label, "=")
	k = w.agent().Rename(k)
	label = k + "=" + v
	return w.nodeEventually(func(n *corev1.Node) error {
		if got, ok := n.Labels[k]; !ok || got != v {
			return fmt.Errorf("node labels %v lack %s", n.Labels, label)
		}
		return nil
	})
}

func (w *World) nodeAnnotation(annotation string) error {
	annotation, err := expandHostIP(annotation)
	if err != nil {
		return err
	}
	k, v, _ := strings.Cut(w.agent().Rename(annotation), "=")
	return w.nodeEventually(func(n *corev1.Node) error {
		if got, ok := n.Annotations[k]; !ok || got != v {
			return fmt.Errorf("node annotations %v lack %s=%s", n.Annotations, k, v)
		}
		return nil
	})
}

// nodeNoAnnotation waits for the agent to have posted a status, then checks the annotation is absent.
func (w *World) nodeNoAnnotation(key string) error {
	if err := w.nodeReady("Ready"); err != nil {
		return err
	}
	key = w.agent().Rename(key)
	return w.nodeEventually(func(n *corev1.Node) error {
		if v, ok := n.Annotations[key]; ok {
			return fmt.Errorf("the node has the annotation %s=%s", key, v)
		}
		return nil
	})
}

func (w *World) nodeTaint(taint string) error {
	taint = w.agent().Rename(taint)
	return w.nodeEventually(func(n *corev1.Node) error {
		for _, t := range n.Spec.Taints {
			if t.ToString() == taint {
				return nil
			}
		}
		return fmt.Errorf("node taints %v lack %s", n.Spec.Taints, taint)
	})
}

// nodeNoTaints waits for the agent to have posted a status, then checks the node has no taint.
func (w *World) nodeNoTaints() error {
	if err := w.nodeReady("Ready"); err != nil {
		return err
	}
	n, err := w.getNode()
	if err != nil {
		return err
	}
	if len(n.Spec.Taints) > 0 {
		return fmt.Errorf("node taints %v, want none", n.Spec.Taints)
	}
	return nil
}

func (w *World) nodeAddress(kind, address string) error {
	address, err := expandHostIP(address)
	if err != nil {
		return err
	}
	return w.nodeEventually(func(n *corev1.Node) error {
		for _, a := range n.Status.Addresses {
			if string(a.Type) == kind && a.Address == address {
				return nil
			}
		}
		return fmt.Errorf("node addresses %v lack %s %s", n.Status.Addresses, kind, address)
	})
}

// nodeOnlyHostname waits for the agent to have posted a status, then checks the node has the
// hostname as its one address.
func (w *World) nodeOnlyHostname(hostname string) error {
	if err := w.nodeReady("Ready"); err != nil {
		return err
	}
	n, err := w.getNode()
	if err != nil {
		return err
	}
	if want := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}; !slices.Equal(n.Status.Addresses, want) {
		return fmt.Errorf("node addresses %v, want only Hostname %s", n.Status.Addresses, hostname)
	}
	return nil
}

// hostIPv4s are the host's global IPv4 addresses: a node IP every agent accepts (Kubernetes'
// kubelet refuses a loopback one and one the host does not have, validateNodeIP).
func hostIPv4s() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var host []string
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.IsGlobalUnicast() && ipnet.IP.To4() != nil {
			host = append(host, ipnet.IP.String())
		}
	}
	if len(host) == 0 {
		return nil, fmt.Errorf("the host running the suite has no global IPv4 address")
	}
	return host, nil
}

// expandHostIP spells {hostIP} in a scenario's text as the host's first global IPv4 address.
func expandHostIP(s string) (string, error) {
	if !strings.Contains(s, "{hostIP}") {
		return s, nil
	}
	host, err := hostIPv4s()
	if err != nil {
		return s, err
	}
	return strings.ReplaceAll(s, "{hostIP}", host[0]), nil
}

// nodeDefaultFamily checks the InternalIP is one of the host's global IPv4 addresses.
func (w *World) nodeDefaultFamily(string) error {
	host, err := hostIPv4s()
	if err != nil {
		return err
	}
	return w.nodeEventually(func(n *corev1.Node) error {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && slices.Contains(host, a.Address) {
				return nil
			}
		}
		return fmt.Errorf("node addresses %v: no InternalIP of the host's IPv4 addresses %v", n.Status.Addresses, host)
	})
}

func (w *World) nodeImages(count int) error {
	return w.nodeEventually(func(n *corev1.Node) error {
		if len(n.Status.Images) != count {
			return fmt.Errorf("node reports %d images, want %d", len(n.Status.Images), count)
		}
		return nil
	})
}

func (w *World) nodeAllocatable(name, less string) error {
	q, err := resource.ParseQuantity(less)
	if err != nil {
		return err
	}
	return w.nodeEventually(func(n *corev1.Node) error {
		capacity, allocatable := n.Status.Capacity[corev1.ResourceName(name)], n.Status.Allocatable[corev1.ResourceName(name)]
		want := capacity.DeepCopy()
		want.Sub(q)
		if capacity.IsZero() || allocatable.Cmp(want) != 0 {
			return fmt.Errorf("allocatable %s %s, capacity %s, want %s", name, &allocatable, &capacity, &want)
		}
		return nil
	})
}

// heartbeat is the Ready condition's heartbeat time.
func heartbeat(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// nodeStatusEvery sees two later posts and checks the time between them.
func (w *World) nodeStatusEvery(seconds int) error {
	var beats []time.Time
	err := eventually(time.Duration(4*seconds)*time.Second+target.CommandTimeout, func() error {
		n, err := w.getNode()
		if err != nil {
			return err
		}
		if hb := heartbeat(n); !hb.IsZero() && (len(beats) == 0 || hb.After(beats[len(beats)-1])) {
			beats = append(beats, hb)
		}
		if len(beats) < 3 {
			return fmt.Errorf("saw %d status posts", len(beats))
		}
		return nil
	})
	if err != nil {
		return err
	}
	gap := beats[2].Sub(beats[1])
	if want := time.Duration(seconds) * time.Second; gap < want-time.Second || gap > want+time.Second {
		return fmt.Errorf("status posted %v apart, want %v", gap, want)
	}
	return nil
}

// leasePath is where the node's Lease is kept in namespace (orch-node-lease for orch), spelt the
// target's way.
func (w *World) leasePath(namespace string) string {
	p := w.t.Profile
	return "/apis/" + p.Spell("coordination.orch.io") + "/v1/namespaces/" + p.Spell(namespace) + "/leases/" + nodeName
}

func (w *World) leaseRenewed(namespace string) error {
	path := w.leasePath(namespace)
	var first time.Time
	return eventually(target.CommandTimeout, func() error {
		var lease struct {
			Spec struct {
				HolderIdentity       string            `json:"holderIdentity"`
				LeaseDurationSeconds int               `json:"leaseDurationSeconds"`
				RenewTime            *metav1.MicroTime `json:"renewTime"`
			} `json:"spec"`
		}
		if err := w.apiGet(path, &lease); err != nil {
			return err
		}
		s := lease.Spec
		if s.HolderIdentity != nodeName || s.LeaseDurationSeconds != 40 || s.RenewTime == nil {
			return fmt.Errorf("lease spec %+v", s)
		}
		if first.IsZero() {
			first = s.RenewTime.Time
		}
		if !s.RenewTime.Time.After(first) {
			return fmt.Errorf("lease not renewed since %v", first)
		}
		return nil
	})
}

func (w *World) createBoundPod(name string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	code, data, err := w.apiDo(http.MethodPost, "/api/v1/namespaces/default/pods", pod)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("creating pod %s: %d %s", name, code, data)
	}
	return nil
}

func (w *World) apiReportsPod(name, phase string) error {
	return eventually(target.CommandTimeout, func() error {
		p := &corev1.Pod{}
		if err := w.apiGet("/api/v1/namespaces/default/pods/"+name, p); err != nil {
			return err
		}
		if string(p.Status.Phase) != phase || p.Status.PodIP == "" {
			return fmt.Errorf("pod %s: phase %q ip %q", name, p.Status.Phase, p.Status.PodIP)
		}
		return nil
	})
}

func (w *World) deletePod(name string) error {
	code, data, err := w.apiDo(http.MethodDelete, "/api/v1/namespaces/default/pods/"+name, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("deleting pod %s: %d %s", name, code, data)
	}
	return nil
}

func (w *World) podGone(name string) error {
	return eventually(target.CommandTimeout, func() error {
		code, _, err := w.apiDo(http.MethodGet, "/api/v1/namespaces/default/pods/"+name, nil)
		if err != nil {
			return err
		}
		if code != http.StatusNotFound {
			return fmt.Errorf("pod %s: %d, want 404", name, code)
		}
		return nil
	})
}
