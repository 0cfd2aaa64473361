package pods

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	fakescript "orch.io/orch/fakecri/script"
)

var update = flag.Bool("update", false, "rewrite the golden CRI requests under testdata")

// goldenConfig is a kubeadm-like node: systemd cgroups with the QoS hierarchy under /, CFS
// quota on, cluster DNS; cgroup v2 with 1GB and 2MB huge pages, 8Gi of memory.
func goldenConfig() *v1beta1.OrchletConfiguration {
	return config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupDriver, c.CgroupRoot = true, "systemd", "/"
		c.CPUCFSQuota, c.CPUCFSQuotaPeriod.Duration = true, 100*time.Millisecond
		c.ClusterDNS, c.ClusterDomain = []string{"10.96.0.10"}, "cluster.local"
	})
}

// TestGoldenRequests runs each manifest under testdata on fakecri and compares, field by field,
// the RunPodSandbox and CreateContainer requests fakecri received with the golden ones beside
// it. A container this agent does not start yet (an init container, whose ordering is built
// elsewhere) is compared as the same config builder makes it for the running sandbox.
//
// The golden requests follow Kubernetes' kubelet v1.34, field by field:
//   - sandbox: generatePodSandboxConfig (metadata, hostname, log directory, DNS from dns.go's
//     GetPodDNS, port mappings), generatePodSandboxLinuxConfig (CgroupParent from
//     GetPodCgroupParent, i.e. pod_container_manager's GetPodContainerName with
//     CgroupName.ToSystemd; RuntimeDefault seccomp; Privileged from HasPrivilegedContainer;
//     the pod's user, groups and SELinux; NamespacesForPod) and applySandboxResources
//     (calculateSandboxResources, convertOverheadToLinuxResources);
//   - containers: generateContainerConfig (ExpandContainerCommandAndArgs, makeEnvironmentVariables,
//     makeMounts in kubelet_pods.go and kuberuntime), generateLinuxContainerResources
//     (calculateLinuxResources with cm.MilliCPUToShares and milliCPUToQuota,
//     qos.GetContainerOOMScoreAdjust, GetHugepageLimitsFromResources) and
//     determineEffectiveSecurityContext (security_context.go).
//
// Where orchlet differs on purpose: labels and annotations are io.orch.* (renamed), the
// restart count annotation is the only container annotation, the termination log file is named
// by the attempt rather than a random id, and env keeps declaration order (the kubelet's is a
// map's).
func TestGoldenRequests(t *testing.T) {
	for _, name := range []string{"etcd", "web", "guaranteed"} {
		t.Run(name, func(t *testing.T) {
			host := t.TempDir()
			raw, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{}
			if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(string(raw), "$HOST", host)), pod); err != nil {
				t.Fatal(err)
			}
			// Every image is on the node: containers the run does not reach (app containers behind
			// a running init container) are configured from their image as created ones are.
			images := []string{"busybox:1.36"}
			for _, c := range allContainers(pod) {
				images = append(images, c.Image)
			}
			script := &fakescript.Script{
				Node:   fakescript.NodeScript{PreloadImages: images},
				Images: []fakescript.ImageRule{{Match: "app/*", UID: ptr.To[int64](999)}},
			}
			tmpfs := &fakeTmpfs{mounted: map[string]int64{}}
			h := newHarness(t, script, goldenConfig(), func(o *Options) {
				o.Node = Node{Name: "node-a", HostIPs: []string{"192.0.2.10"}, MemoryCapacity: 8 << 30, CgroupV2: true,
					HugePageSizes: []string{"1GB", "2MB"}, Tmpfs: tmpfs, SeccompDefault: false}
				o.FS = fstest.MapFS{"etc/hosts": {Data: []byte("127.0.0.1 localhost\n192.0.2.10 node-a\n")}}
			})
			h.add(pod)
			h.runUntil(time.Second)

			sbs := sent[*runtimeapi.RunPodSandboxRequest](h, "RunPodSandbox")
			if len(sbs) != 1 {
				t.Fatalf("%d sandboxes; events %q", len(sbs), h.rec.lines())
			}
			got := map[string]proto.Message{"RunPodSandbox": sbs[0].Config}
			for _, req := range sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer") {
				got["CreateContainer "+req.Config.Metadata.Name] = req.Config
				diffProto(t, "sandbox config sent with "+req.Config.Metadata.Name, sbs[0].Config, req.SandboxConfig)
			}
			p := h.m.pods[pod.UID]
			if pod.Spec.HostNetwork {
				// ensureHostsFile for a host-network pod: the node's own, marked managed.
				hosts, err := os.ReadFile(filepath.Join(h.m.node.RootDir, "pods", string(pod.UID), "etc-hosts"))
				if want := "# Orch-managed hosts file (host network).\n127.0.0.1 localhost\n192.0.2.10 node-a\n"; err != nil || string(hosts) != want {
					t.Errorf("etc-hosts %q %v, want %q", hosts, err, want)
				}
			}
			for _, c := range allContainers(pod) {
				if _, ok := got["CreateContainer "+c.Name]; ok {
					continue
				}
				st, err := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: c.Image}})
				if err != nil || st.Image == nil {
					t.Fatalf("image %s: %v", c.Image, err)
				}
				cfg, err := h.m.containerConfig(h.ctx, p, &c, st.Image.Id, 0)
				if err != nil {
					t.Fatalf("container %s: %v", c.Name, err)
				}
				got["CreateContainer "+c.Name] = cfg
			}
			if len(got) != 1+len(allContainers(pod)) {
				t.Fatalf("requests for %d containers, want %d", len(got)-1, len(allContainers(pod)))
			}
			rendered := renderGolden(t, got, map[string]string{h.m.node.RootDir: "$ROOT", host: "$HOST", h.pod(pod.Name).Status.PodIP: "$POD_IP"})
			file := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(file, rendered, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(rendered)); d != "" {
				t.Errorf("%s (-want +got):\n%s", file, d)
			}
		})
	}
}

// renderGolden writes the requests as indented JSON with sorted keys (protojson's own layout is
// deliberately unstable), env as KEY=value text in order rather than base64, the run's temporary
// paths and addresses replaced by placeholders.
func renderGolden(t *testing.T, msgs map[string]proto.Message, placeholders map[string]string) []byte {
	t.Helper()
	all := map[string]any{}
	for k, m := range msgs {
		var env []string
		if c, ok := m.(*runtimeapi.ContainerConfig); ok && len(c.Envs) > 0 {
			for _, e := range c.Envs {
				env = append(env, e.Key+"="+string(e.Value))
			}
			c = proto.Clone(c).(*runtimeapi.ContainerConfig)
			c.Envs = nil
			m = c
		}
		data, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		if env != nil {
			v["envs"] = env
		}
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for from, to := range placeholders {
			if from != "" {
				text = strings.ReplaceAll(text, from, to)
			}
		}
		var out any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatal(err)
		}
		all[k] = out
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// The sandbox request Kubernetes' kubelet v1.34.4 sent for a static pod
// (/work/shared/reference/kubelet-RunPodSandbox-request.txt, run without --cgroups-per-qos and
// with --cluster-dns 10.255.255.53): the same metadata, hostname, log directory, port mapping
// and Linux config, field by field; labels renamed io.orch.*.
func TestKubeletReferenceSandbox(t *testing.T) {
	h := newHarness(t, nil, config(func(c *v1beta1.OrchletConfiguration) {
		c.ClusterDNS = []string{"10.255.255.53"}
		c.CgroupsPerQOS, c.CPUCFSQuota, c.CPUCFSQuotaPeriod.Duration = false, true, 100*time.Millisecond
	}), nil)
	c := ctr("web", "nginx:1.27")
	c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	pod := newPod("static-web-peer-node", c)
	pod.UID, pod.Labels = "a61a0300e004871a79885eb554b65e3d", nil
	h.add(pod)
	h.runUntil(time.Second)
	sbs := sent[*runtimeapi.RunPodSandboxRequest](h, "RunPodSandbox")
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes", len(sbs))
	}
	var ref runtimeapi.RunPodSandboxRequest
	// The captured request, as prototext, less what is not the pod workers' (annotations the file
	// source adds, the DNS options the existing DNS rules cover) and renamed.
	text := `config:{metadata:{name:"static-web-peer-node" uid:"a61a0300e004871a79885eb554b65e3d" namespace:"default"} hostname:"static-web-peer-node" log_directory:"/var/log/pods/default_static-web-peer-node_a61a0300e004871a79885eb554b65e3d" port_mappings:{container_port:80} labels:{key:"io.orch.pod.name" value:"static-web-peer-node"} labels:{key:"io.orch.pod.namespace" value:"default"} labels:{key:"io.orch.pod.uid" value:"a61a0300e004871a79885eb554b65e3d"} linux:{security_context:{namespace_options:{pid:CONTAINER userns_options:{mode:NODE}} seccomp:{}} overhead:{} resources:{cpu_period:100000 cpu_shares:2}}}`
	if err := prototextUnmarshal(text, &ref); err != nil {
		t.Fatal(err)
	}
	got := proto.Clone(sbs[0].Config).(*runtimeapi.PodSandboxConfig)
	got.DnsConfig, got.Annotations = nil, nil
	diffProto(t, "sandbox request", ref.Config, got)
	if !cmp.Equal(sbs[0].Config.DnsConfig.GetServers(), []string{"10.255.255.53"}) {
		t.Errorf("DNS servers %v", sbs[0].Config.DnsConfig.GetServers())
	}
}

func prototextUnmarshal(s string, m proto.Message) error { return prototext.Unmarshal([]byte(s), m) }
