package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// skeleton is what orchsim new writes: a scenario that loads, runs and meets its expectations, each
// key commented; the keys it leaves out are named in comments where they go.
const skeleton = `# A scenario: one node's life replayed in simulated time. scenarios/README.md documents every
# key; orchsim run --update writes the golden trace beside this file, orchsim run checks it.
description: |
  What happens and what it shows. This one starts a node whose manifest directory holds one pod,
  adds a second pod at 30s, and removes the first at 1m.
rules:                    # the SPEC.md rules it proves, as sentences (orchsim list shows them)
  - "The manifest directory is read at start and every 20s (--file-check-frequency)."
seed: 1                   # fakecri's ids and seeded faults; the golden trace is for this seed
duration: 2m              # how long the world runs (a Go duration, or seconds)
omit: ["cri List*", "cri ContainerStatus *", "cri PodSandboxStatus *", "cri ImageStatus *", "cri Version *", "cri Status *"]
                          # globs over "<kind> <text>" of lines the golden trace leaves out
nodes:
  - name: node-a
    # Any orchlet option, read by the orchlet's own parser (a misspelt one is refused).
    args: ["--pod-manifest-path=/etc/orch/manifests"]
    # Also: config (the --config file's fields below apiVersion and kind), cores, url (what
    # --manifest-url serves), api: true (API-server mode against the world's API server), host
    # (memory, systemMemory, pidMax, systemProcesses, swap, cgroupVersion, sysctls).
    manifests:            # the files of --pod-manifest-path at the start
      - name: web.yaml
        content: |
          apiVersion: v1
          kind: Pod
          metadata: {name: web, namespace: default}
          spec:
            containers:
            - {name: app, image: nginx:1.27}
    fakecri:              # the runtime's behaviour, as fakecri/README.md documents it
      images:
        - {match: "nginx*", size: 50Mi, pullDuration: 2s}
      # containers: [{match: {image: "leaker*"}, usage: {memory: {ramp: {from: 10Mi, perSecond: 1Mi}}}}]
      # faults: [{method: StopPodSandbox, hang: true, times: 1}]
timeline:                 # changes at simulated times, in time order, none past duration
  - at: 30s
    # node: node-a        # the first node unless named
    write:
      name: cache.yaml
      content: |
        apiVersion: v1
        kind: Pod
        metadata: {name: cache, namespace: default}
        spec:
          containers:
          - {name: redis, image: redis:7}
  - at: 1m
    delete: [web.yaml]
    # Also: serve (what the manifest URL answers), fakecri (a new script), orchlet (kill or
    # restart the agent), and with an api: true node createPod, bindPod, deletePod and apiServer
    # (down or up).
expect:                   # what the trace must show; globs over whole trace lines
  contains:
    - "00:00:00.000 node-a source ADD file default/web-node-a"
  absent:
    - "* FailedSync *"
  # count: [{match: "* source file read *", lines: 7}]
  pods:                   # a pod's last traced state by then ("gone" once it left)
    - {at: 50s, pod: default/cache-node-a, state: "Running redis=running"}
    - {at: 2m, pod: default/web-node-a, state: gone}
  # events: [{reason: Pulled, count: 2}]
  # runtime: [{at: 2m, pods: {default/cache-node-a: [redis]}}]
`

// WriteSkeleton writes a commented scenario skeleton to path, refusing to overwrite a file.
func WriteSkeleton(path string) error {
	if !strings.HasSuffix(path, ".yaml") {
		return fmt.Errorf("%s: a scenario file's name ends in .yaml", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s: already exists; orchsim new writes only a new file", path)
	}
	if err != nil {
		return err
	}
	_, werr := f.WriteString(skeleton)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		_ = os.Remove(path)
	}
	return werr
}
