# orch: the node agent, the Event API and the harness that proves them.
GO    ?= go
BIN   := bin
PKGS  := ./...

.PHONY: all build test lint run readme bench bench-sim bench-sim-10k bench-peers peers peers-kubelet-fakecri conformance-peers critest orchlet-at fuzz fuzz-api fuzz-config fuzz-jwt chaos chaos-apiserver-64 chaos-apiserver-etcd3 chaos-apiserver-failover chaos-apiserver-exhaust chaos-agent chaos-agent-api conformance coverage scenarios plots-browser e2e-containerd bench-node bench-streams kubectl clean

all: build

## build: every binary of cmd/ into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## test: the default suite CI runs: lint, then every package's tests under the race detector,
## the forked clock's (a module of its own) included; the conformance suite's real-time waits take
## 7-10 minutes of it on a 2-core machine, so a package has 20 rather than go test's default 10
test: lint
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd third_party/forked/clock && $(GO) test -race -count=1 ./...

## lint: gofmt, go vet, staticcheck (at STATICCHECK_VERSION: values computed and never read, unused
## code, deprecated calls...), and no wall-clock calls in component code (it takes a clock.Clock);
## the storage conformance suite and the orchlet's apptest are test code that wait on a real etcd
## or process, so they may
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK         ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
lint:
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags e2e ./cmd/orchlet/
	$(GO) vet -tags e2e,benchnode,benchstreams ./cmd/orchlet/
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags e2e,benchnode,benchstreams ./cmd/orchlet/
	@if git grep -nE 'time\.(Now|Sleep|After|AfterFunc|Since|Until|NewTicker|NewTimer|Tick)\(' -- \
		'components/*.go' 'fakecri/*.go' 'sim/*.go' ':!*_test.go' ':!components/apiserver/storage/storagetest/*' ':!components/orchlet/app/apptest/*' ':!components/apiserver/app/apptest/*'; then \
		echo "wall-clock calls in component code: take a clock.Clock (see ARCHITECTURE.md)"; exit 1; fi

## run: a one-node cluster on embedded defaults: orch-apiserver (embedded etcd under ./orch-data,
## HTTPS on :6443) and one orchlet on fakecri registered to it, each with a token of its own, the
## orchlet answering only requests the API server authenticates and authorizes (its client
## certificate, under orch-data/pki, among them);
## it writes orch-data/admin.conf, a kubeconfig for kubectl, orch-data/orchlet.yaml, the orchlet's
## configuration file, and orch-data/apiserver.log, the server's log. Ctrl-C stops all three, and so
## does any one of them ending.
RUN_DIR := $(CURDIR)/orch-data
run: SHELL := /bin/bash
run:
	$(GO) build -o $(BIN)/ ./cmd/orch-apiserver ./cmd/orchlet ./cmd/fakecri
	@mkdir -p $(RUN_DIR)
	@$(GO) run ./cmd/internal/runpki $(RUN_DIR)/pki
	@node=$$(hostname | tr A-Z a-z); \
	if [ ! -f $(RUN_DIR)/tokens.csv ]; then \
		printf '%s,admin,admin,system:masters\n%s,system:node:%s,system:node:%s,system:nodes\n' \
			$$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') $$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') $$node $$node \
			> $(RUN_DIR)/tokens.csv; chmod 600 $(RUN_DIR)/tokens.csv; fi; \
	for who in admin orchlet; do line=$$([ $$who = admin ] && sed -n 1p $(RUN_DIR)/tokens.csv || sed -n 2p $(RUN_DIR)/tokens.csv); \
		printf '%s\n' 'apiVersion: v1' 'kind: Config' \
		'clusters: [{name: orch, cluster: {server: "https://localhost:6443", certificate-authority: "$(RUN_DIR)/pki/apiserver.crt"}}]' \
		"users: [{name: $$who, user: {token: $${line%%,*}}}]" "contexts: [{name: orch, context: {cluster: orch, user: $$who}}]" \
		'current-context: orch' > $(RUN_DIR)/$$who.conf; chmod 600 $(RUN_DIR)/$$who.conf; done; \
	printf '%s\n' 'apiVersion: orchlet.config.orch.io/v1beta1' 'kind: OrchletConfiguration' \
		'containerRuntimeEndpoint: unix://$(RUN_DIR)/fakecri.sock' 'failSwapOn: false' 'readOnlyPort: 0' \
		'authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $(RUN_DIR)/pki/orchlet-client-ca.crt}}' \
		'authorization: {mode: Webhook}' > $(RUN_DIR)/orchlet.yaml
	@rm -f $(RUN_DIR)/apiserver.log; stop() { trap - INT TERM EXIT; kill $$(jobs -p) 2>/dev/null; wait; }; \
	trap 'stop; exit 0' INT TERM; trap stop EXIT; \
	$(BIN)/orch-apiserver --data-dir $(RUN_DIR) --token-auth-file $(RUN_DIR)/tokens.csv --anonymous-auth=false --authorization-mode=Node,RBAC \
		--orchlet-client-certificate $(RUN_DIR)/pki/orch-apiserver-orchlet-client.crt --orchlet-client-key $(RUN_DIR)/pki/orch-apiserver-orchlet-client.key \
		2> >(trap '' INT TERM; exec tee $(RUN_DIR)/apiserver.log >&2) & \
	until grep -qs '"Serving securely"' $(RUN_DIR)/apiserver.log; do [ -n "$$(jobs -pr)" ] || exit 1; sleep 0.2; done; \
	rm -f $(RUN_DIR)/fakecri.sock; $(BIN)/fakecri --listen unix://$(RUN_DIR)/fakecri.sock --control none & \
	until [ -S $(RUN_DIR)/fakecri.sock ]; do [ $$(jobs -pr | wc -l) = 2 ] || exit 1; sleep 0.2; done; \
	$(BIN)/orchlet --config $(RUN_DIR)/orchlet.yaml --orchconfig $(RUN_DIR)/orchlet.conf \
		--root-dir $(RUN_DIR)/orchlet --cert-dir $(RUN_DIR)/orchlet/pki & \
	echo; echo "orch is up: export KUBECONFIG=$(RUN_DIR)/admin.conf, then kubectl get nodes"; echo; \
	wait -n

## readme: every shell block of README.md run in order as a reader runs them (make run in the
## background, kubectl from make kubectl, curl), in a copy of this checkout, holding each to what the
## page says it prints; needs ports 6443, 10248, 10250 and 10255 free; about 5 minutes, most of them
## building kubectl the first time
readme:
	$(GO) test -count=1 -v -timeout 30m -run '^TestREADME$$' . -args -readme

## conformance: every feature file and ginkgo spec against TARGET (a profile under
## conformance/targets/), with progress as it goes; reports land in reports/
TARGET ?= conformance/targets/orch.yaml
conformance:
	$(GO) test -count=1 -v -timeout 30m -run '^(TestConformance|TestSpecs)$$' ./conformance/ -args -target=$(abspath $(TARGET)) -reports=$(CURDIR)/reports

## coverage: covered / total catalog rules per area; fails on an uncovered rule outside the dated
## pending list, an unknown rule tag, or an undefined or code-less step
coverage:
	$(GO) test -count=1 -v -run '^TestCoverage$$' ./conformance/

## scenarios: replay every scenario of scenarios/ on the simulator and diff it against its golden trace
scenarios:
	$(GO) run ./cmd/orchsim run scenarios/

## plots-browser: the simulator's plots in a real browser, Debian's chromium (installed if missing;
## needs root): a test renders the pod lanes and reads the eviction marker's pixels, then the memory
## leak's compare page (100Mi against 300Mi) is rendered to $(BIN)/plots/; not in CI
PLOT_PAGE = eviction-memory-leak-hard-compare
plots-browser:
	command -v chromium >/dev/null || apt-get install -y --no-install-recommends chromium
	$(GO) test -tags browser -count=1 -run '^TestBrowser' ./sim/scenario/
	$(GO) run ./cmd/orchsim compare --html $(BIN)/plots --sweep 'eviction-hard=memory.available<100Mi,300Mi' scenarios/eviction-memory-leak-hard.yaml
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1040,1400 \
		--screenshot=$(CURDIR)/$(BIN)/plots/$(PLOT_PAGE).png file://$(CURDIR)/$(BIN)/plots/$(PLOT_PAGE).html 2>/dev/null
	@echo "$(BIN)/plots/$(PLOT_PAGE).png"

## e2e-containerd: orchlet on containerd + runc (Debian's packages; needs root) and on fakecri: a
## static pod running, exec through the agent's streams (SPDY and WebSocket, stdin, exit codes) and,
## on containerd, port-forward to busybox's httpd and logs --previous, a crash loop backing off, the pull policies, the
## pod torn down; image and
## dead-container garbage collection on containerd; a web pod on containerd (init before app,
## readiness gating Ready, preStop before the kill, runAsUser, cgroup limits); node allocatable
## enforced on the pods' and reserved cgroups, and the agent's OOM score and open-files limit; a pull
## from a password-protected registry with a credential provider plugin's answer; the iptables
## utility chains read back in a network namespace of the test's; a flexVolume driver's volume; the stats
## summary's system containers (containerd's cgroup as --runtime-cgroups names it); a
## minute of a node on containerd recorded through fakecri record and replayed by the simulator
## (restarts, OOM kills and an eviction matching within one sampling period), and a compare run on
## the recording; kubectl (the project's, and the machine's if on PATH) through orch-apiserver to
## an API-mode orchlet on containerd: exec (-it on a terminal, -i piped, exit codes), cp both ways,
## logs (-f, --previous), port-forward, attach -i, debug -it --target, and streams byte-exact
## (16 MiB of exec output, 256 MiB echoed through a port-forward; on fakecri too); orchlet killed
## twice among 20 pods, standalone and in API-server mode (the short runs of make chaos-agent and
## make chaos-agent-api), a task containerd strands behind CRI's back cleared by the campaign's
## clean-up, and a pod whose stranded container containerd will not remove torn down all the same
## (what is left in its cgroup killed, the removal left to the container GC); a stale pod cgroup with a process in it killed and removed by the agent's
## housekeeping, a live pod's kept
e2e-containerd:
	$(GO) test -tags e2e -count=1 -v -timeout 20m -run '^(TestStandalone(ScenarioOn(Containerd|Fakecri)|GCOnContainerd|PodSpecOnContainerd|NodeAllocatableOnContainerd|MemoryManagerOnContainerd|CredentialProviderOnContainerd|IPTablesChainsInANetworkNamespace|FlexVolumeOnContainerd|SystemContainersOnContainerd)|TestOrphanedPodCgroupsOnContainerd|TestRecordReplayOnContainerd|TestKubectl(Exec|Cp|Logs|PortForward|Attach|Debug|StreamBytes)OnContainerd|TestKubectlStreamBytesOnFakecri|TestAgentKilled(InAPIMode)?OnContainerd|TestStrandedTask(DeletedOnContainerd|DoesNotHoldADeletedPodOnContainerd))$$' ./cmd/orchlet/

## bench: speed and memory figures: Go benchmarks (storage, registry, RBAC authorization among 1,000
## roles and bindings, fakecri, the simulator at scale), then the Event API load tool against a freshly started orch-apiserver (creates with 8
## clients, LIST of 10,000, watch delivery to 100 watchers, RSS), and 100 pods through the API for
## one orchlet on fakecri; about 3 minutes on 2 cores
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./components/apiserver/storage/... ./components/apiserver/registry/... ./components/authz/rbac/ ./fakecri/...
	$(MAKE) bench-sim
	$(GO) test -run '^$$' -bench BenchmarkAPIServerMode100Pods -benchtime 3x ./components/orchlet/app/
	$(GO) build -o $(BIN)/orch-apiserver ./cmd/orch-apiserver
	$(GO) run ./cmd/orchload --start --apiserver-bin $(BIN)/orch-apiserver --json $(BIN)/orchload.json $(BENCHFLAGS)

## bench-sim: the simulator's scale figures alone (24 simulated hours of a 110-pod node, 100 such
## nodes for an hour, 1,000 API-server-mode nodes for an hour); SIM_HOURS=0.1 for a short look;
## SIM_COST=1 splits the node-day under pressure's CPU between the simulator and the production code;
## the collector runs at GOGC=400 under a soft memory limit unless GOGC or GOMEMLIMIT is set (README)
bench-sim:
	$(GO) test -run '^$$' -bench . -skip TenThousand -benchtime 1x -timeout 30m ./sim

## bench-sim-10k: 10,000 API-server-mode nodes for a simulated hour (SIM_HOURS for less): wall time,
## peak heap and RSS, and the API server's load (requests by verb; SIM_COST=1 its share of the CPU)
bench-sim-10k:
	$(GO) test -run '^$$' -bench '^BenchmarkTenThousandAPINodesHour$$' -benchtime 1x -timeout 120m ./sim

## peers: Kubernetes' kube-apiserver, kubelet and kube-controller-manager (KUBE_VERSION), built from
## the Go module proxy into PEERS_CACHE, outside the repository: a module requiring k8s.io/kubernetes
## with each staging module pinned to the matching v0.x release; about 5 minutes cold on 2 cores
## (kube-controller-manager, which signs the kubelet's certificates, a few more), nothing once built
KUBE_VERSION ?= 1.34.4
PEERS_CACHE  ?= $(HOME)/.cache/orch-peers
PEERS        := $(PEERS_CACHE)/v$(KUBE_VERSION)
PEERS_LDFLAGS = -X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
peers: $(PEERS)/kube-apiserver $(PEERS)/kube-controller-manager
$(PEERS)/kube-apiserver:
	mkdir -p $(PEERS)/src
	cd $(PEERS)/src && gomod=$$($(GO) mod download -json k8s.io/kubernetes@v$(KUBE_VERSION) | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') && \
	{ printf 'module orch.io/peers\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v$(KUBE_VERSION)\n\nreplace (\n'; \
	  grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$$' $$gomod | awk '{print "\t" $$1 " => " $$1 " $(patsubst 1.%,v0.%,$(KUBE_VERSION))"}'; echo ')'; } > go.mod && \
	printf '//go:build tools\n\npackage peers\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n)\n' > tools.go && \
	$(GO) mod tidy && $(GO) build -ldflags "$(PEERS_LDFLAGS)" -o $(PEERS)/kubelet k8s.io/kubernetes/cmd/kubelet && \
	$(GO) build -ldflags "$(PEERS_LDFLAGS)" -o $(PEERS)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
$(PEERS)/kube-controller-manager: $(PEERS)/kube-apiserver
	cd $(PEERS)/src && grep -q kube-controller-manager tools.go || { \
	  sed -i 's|^\t_ "k8s.io/kubernetes/cmd/kubelet"$$|&\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"|' tools.go && $(GO) mod tidy; } && \
	$(GO) build -ldflags "$(PEERS_LDFLAGS)" -o $(PEERS)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager

## bench-node: orchlet side by side with Kubernetes' kubelet (built by `make peers`) on a containerd
## of its own (needs root, Debian's containerd, runc and busybox-static), each run twice, alternating:
## one static pod to Running, 100 at once, RSS idle and at 100 pods, CPU over 60s at 100 pods, and
## the ratios orchlet/kubelet against their targets (one pod no slower, 100 pods in 2/3 of the time,
## half the RSS and CPU at 100 pods); about 12 minutes
bench-node: $(PEERS)/kube-apiserver
	ORCH_PEER_KUBELET=$(PEERS)/kubelet $(GO) test -tags e2e,benchnode -count=1 -v -timeout 40m -run '^TestBenchNode$$' ./cmd/orchlet/

## bench-streams: reaching the pods, orch-apiserver and orchlet beside Kubernetes' kube-apiserver and
## kubelet (built by `make peers`) on a containerd of its own (needs root, Debian's containerd, runc and
## busybox-static; hold /tmp/orch-containerd.lock where containerd is shared), each pair run twice,
## alternating, measured with kubectl (KUBECTL, default the one on PATH): `kubectl exec -- true` round
## trip (p50, p99 of 50), a line's latency to `kubectl logs -f`, `kubectl port-forward` throughput of
## 256 MiB and the CPU each process of the forward spends on it, RSS per open idle exec stream in both
## servers; prints the ratios against their targets
bench-streams: $(PEERS)/kube-apiserver
	ORCH_PEERS=$(PEERS) $(GO) test -tags e2e,benchstreams -count=1 -v -timeout 40m -run '^TestBenchStreams$$' ./cmd/orchlet/

## bench-peers: orch-apiserver and Kubernetes' kube-apiserver on its own etcd, measured by orchload in
## one sitting, alternating, twice each: the default suite (8 clients, LIST of 10,000, 100 watchers),
## then the scale runs (64 clients, LIST of 100,000, 10,000 watchers; PEERS_SCALE=no skips
## them: about 3 minutes instead of 11); creates on orchload's bare HTTP/2 TLS server (--floor: the
## server CPU a create costs before any API server works); prints every figure, the ratios (above 1:
## orch better) and each target
PEERS_SCALE ?= yes
PEER_RUNS_SCALE = "c64:--only create --clients 64" "list100k:--only list --list-events 100000 --list-runs 3" "w10k:--only watch --watchers 10000 --watch-events 200"
bench-peers: peers
	$(GO) build -o $(BIN)/orch-apiserver ./cmd/orch-apiserver
	$(GO) build -o $(BIN)/orchload ./cmd/orchload
	rm -f $(BIN)/peers-*.json
	for i in 1 2; do \
	  for run in "default:" $(if $(filter yes,$(PEERS_SCALE)),$(PEER_RUNS_SCALE)); do \
	    name=$${run%%:*}; flags=$${run#*:}; \
	    $(BIN)/orchload --start --apiserver-bin $(BIN)/orch-apiserver --json $(BIN)/peers-orch-$$name-$$i.json $$flags $(BENCHFLAGS) || exit 1; \
	    $(BIN)/orchload --kube-apiserver-bin $(PEERS)/kube-apiserver --json $(BIN)/peers-kube-$$name-$$i.json $$flags $(BENCHFLAGS) || exit 1; \
	  done; \
	done
	$(BIN)/orchload --floor --only create --json $(BIN)/peers-floor.json $(BENCHFLAGS)
	$(BIN)/orchload --compare $$(ls -tr $(BIN)/peers-orch-*.json | paste -sd,):$$(ls -tr $(BIN)/peers-kube-*.json | paste -sd,)

## conformance-peers: the suite against orch and against a Kubernetes peer built by `peers`
## (PEER_TARGET: kube-apiserver.yaml, kubelet.yaml, or kubernetes-cluster.yaml: the kubelet
## registered to kube-apiserver), one after the other, reports under reports/peers/<orch|peer>/,
## then the table: rules passed on orch, on the peer, differing, not applicable. FILTER narrows both
## runs to a godog tag expression (e.g. FILTER=@component:config-check); without one the ginkgo specs
## run too. A failing rule does not stop the table; reports/peers.md explains the differences.
PEER_TARGET ?= conformance/targets/kube-apiserver.yaml
FILTER ?=
PEER_TESTS = ^(TestConformance$(if $(FILTER),,|TestSpecs))$$
conformance-peers: peers
	-ORCH_PEERS=$(PEERS) $(GO) test -count=1 -v -timeout 60m -run '$(PEER_TESTS)' ./conformance/ -args -target=$(abspath conformance/targets/orch.yaml) -reports=$(CURDIR)/reports/peers/orch -filter='$(FILTER)'
	-ORCH_PEERS=$(PEERS) $(GO) test -count=1 -v -timeout 60m -run '$(PEER_TESTS)' ./conformance/ -args -target=$(abspath $(PEER_TARGET)) -reports=$(CURDIR)/reports/peers/peer -filter='$(FILTER)'
	$(GO) test -count=1 -v -run '^$$' ./conformance/ -args -compare=$(CURDIR)/reports/peers/orch/rules.json,$(CURDIR)/reports/peers/peer/rules.json | grep -v '^ok\s' | tee $(CURDIR)/reports/peers/table.txt

## peers-kubelet-fakecri: Kubernetes' kubelet (built by `peers`) in standalone mode on bin/fakecri with
## three static pods for KUBELET_RUN: the pods Running in its /pods, every CRI method of the reference
## capture called without error at its rate, no kubelet error line that is not the host's (needs root;
## about KUBELET_RUN plus 10 s). Evidence under reports/peers/kubelet-fakecri/.
KUBELET_RUN     ?= 70s
PEERS_REFERENCE ?= $(firstword $(wildcard $(CURDIR)/../shared/reference/kubelet-cri-call-counts.txt $(CURDIR)/../../shared/reference/kubelet-cri-call-counts.txt))
peers-kubelet-fakecri: peers
	$(GO) build -o $(BIN)/fakecri ./cmd/fakecri
	$(GO) vet -tags peers ./conformance/peerkubelet/
	ORCH_PEERS=$(PEERS) $(GO) test -tags peers -count=1 -v -timeout 30m -run '^TestKubeletOnFakecri$$' ./conformance/peerkubelet/ -args \
	  -duration=$(KUBELET_RUN) -fakecri=$(abspath $(BIN))/fakecri -reference=$(PEERS_REFERENCE) -report=$(CURDIR)/reports/peers/kubelet-fakecri

## critest: Kubernetes' CRI validation suite, critest of cri-tools CRITOOLS_VERSION (built once from the
## Go module proxy into PEERS_CACHE), against bin/fakecri on a socket of its own; about 16 minutes, most
## of it specs waiting a minute for what a fake cannot do; CRITEST_FOCUS narrows it to the specs whose
## names match a regular expression. reports/critest.md gives the counts and every failing spec's reason.
CRITOOLS_VERSION ?= 1.34.0
CRITEST          := $(PEERS_CACHE)/critest-v$(CRITOOLS_VERSION)
CRITEST_FOCUS    ?=
critest: $(CRITEST)
	$(GO) build -o $(BIN)/fakecri ./cmd/fakecri
	dir=$$(mktemp -d /tmp/orch-critest-XXXXXX); \
	$(BIN)/fakecri --listen unix://$$dir/cri.sock --control none --state-dir $$dir/state & pid=$$!; \
	until [ -S $$dir/cri.sock ]; do kill -0 $$pid || exit 1; sleep 0.1; done; \
	$(CRITEST) --runtime-endpoint unix://$$dir/cri.sock --image-endpoint unix://$$dir/cri.sock \
	  $(if $(CRITEST_FOCUS),--ginkgo.focus '$(CRITEST_FOCUS)'); rc=$$?; \
	kill $$pid; wait $$pid; rm -rf $$dir; exit $$rc
$(CRITEST):
	mkdir -p $(PEERS_CACHE)
	src=$$($(GO) mod download -json sigs.k8s.io/cri-tools@v$(CRITOOLS_VERSION) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p') && \
	cd $$src && $(GO) test -c -o $@ ./cmd/critest

## orchlet-at: the agent rules (FILTER, default @component:agent) against this checkout's orchlet and
## against orchlet built at ORCHLET_AT (a commit; `git archive` of it built into ORCHLET_AT_CACHE, once
## per commit), everything else from this checkout (conformance/targets/orchlet-at.example.yaml), then
## the rule diff: "orch" is this checkout, "the peer" the other commit. Reports under reports/peers/at-*.
ORCHLET_AT       ?=
ORCHLET_AT_CACHE ?= $(HOME)/.cache/orch-orchlet-at
orchlet-at:
	@test -n "$(ORCHLET_AT)" || { echo "orchlet-at: set ORCHLET_AT=<commit>"; exit 2; }
	commit=$$(git rev-parse --verify '$(ORCHLET_AT)^{commit}') && dir=$(ORCHLET_AT_CACHE)/$$commit && \
	if [ ! -x $$dir/orchlet ]; then \
	  rm -rf $$dir/src && mkdir -p $$dir/src && git archive $$commit | tar -x -C $$dir/src && \
	  (cd $$dir/src && $(GO) build -o $$dir/orchlet ./cmd/orchlet) || exit 1; \
	fi && \
	filter='$(or $(FILTER),@component:agent)' && \
	{ $(GO) test -count=1 -v -timeout 60m -run '^TestConformance$$' ./conformance/ -args -target=$(abspath conformance/targets/orch.yaml) -reports=$(CURDIR)/reports/peers/at-head -filter="$$filter"; \
	  ORCHLET_AT_BIN=$$dir/orchlet $(GO) test -count=1 -v -timeout 60m -run '^TestConformance$$' ./conformance/ -args -target=$(abspath conformance/targets/orchlet-at.example.yaml) -reports=$(CURDIR)/reports/peers/at-commit -filter="$$filter"; \
	  echo "orchlet at $$commit ($(ORCHLET_AT)) beside this checkout's"; }
	$(GO) test -count=1 -v -run '^$$' ./conformance/ -args -compare=$(CURDIR)/reports/peers/at-head/rules.json,$(CURDIR)/reports/peers/at-commit/rules.json | grep -v '^ok\s' | tee $(CURDIR)/reports/peers/at-table.txt

## fuzz-config: fuzz every configuration loader for FUZZTIME each (new corpus lands in testdata/fuzz)
FUZZTIME ?= 5m
fuzz-config:
	for f in FuzzParseAuthentication FuzzParseAuthorization FuzzParseEncryption FuzzParseAdmission FuzzParseTracing FuzzCELExpression; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./components/apis/apiserver/config/ || exit 1; \
	done

## fuzz-jwt: fuzz orch-apiserver's JWT authentication for FUZZTIME: no token of any shape gets in
fuzz-jwt:
	$(GO) test -run '^$$' -fuzz '^FuzzAuthenticateToken$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./components/authn/jwt/

## fuzz-api: fuzz orch-apiserver's request path for FUZZTIME each: bodies of every stored kind and
## review posted as JSON, YAML and protobuf, list queries (selectors, limits, continue tokens,
## resource versions), continue tokens; an answer of 500 or one that is not JSON is a find
fuzz-api:
	for t in server:FuzzCreateBodies server:FuzzListQueries registry/generic:FuzzDecodeContinue; do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./components/apiserver/$${t%%:*}/ || exit 1; \
	done

## fuzz-agent: fuzz the orchlet's input for FUZZTIME each: its configuration files (--config and a
## drop-in), its kubeconfigs (--orchconfig, --bootstrap-kubeconfig), static pod manifests from files
## and a URL, the runtime's answers (a simulated node fed CRI replies changed as the fuzzer says,
## which must converge once they are true again), and the stream framing the agent and the API
## server's stream proxy read (the tunnel's upstream answer, the resize channel). The simulated node
## is slow to minimize, so its interesting inputs are minimized by count, not time.
FUZZ_AGENT := components/orchlet/options:FuzzConfigFiles components/orchlet/certificate:FuzzOrchconfig \
	components/orchlet/sources:FuzzManifests third_party/forked/streamproxy:FuzzTunnelResponse \
	third_party/forked/streamproxy:FuzzResizeEvents
.PHONY: fuzz-agent
fuzz-agent:
	for t in $(FUZZ_AGENT); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./$${t%%:*}/ || exit 1; \
	done
	$(GO) test -run '^$$' -fuzz '^FuzzCRIReplies$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./sim/

## soak-runtime: a simulated node of 110 pods, 10 replaced every 2 minutes, on a fakecri that fails
## every method and delays the pod workers' at seeded random (SOAK_SEED) for SOAK_TIME of simulated
## time; then the faults stop and within one sync period exactly the pods that should run must run,
## each once (make test runs 20 simulated minutes of it)
SOAK_TIME ?= 10h
SOAK_SEED ?= 1
.PHONY: soak-runtime
soak-runtime:
	$(GO) test -count=1 -v -timeout 60m -run '^TestRuntimeFaultSoak$$' ./sim/ -args -soak=$(SOAK_TIME) -soak-seed=$(SOAK_SEED)

## fuzz: every fuzz target above, FUZZTIME each
fuzz: fuzz-api fuzz-config fuzz-jwt fuzz-agent

## chaos: kill -9 orch-apiserver (embedded etcd, loopback) CHAOS_KILLS times under 8 writing clients,
## at moments seeded by CHAOS_SEED; after each restart nothing acknowledged may be lost, nothing half
## there, and the resumed watch must have seen every change once, in order (~3 minutes at the default)
CHAOS_KILLS ?= 40
CHAOS_SEED ?= 1
chaos:
	$(GO) build -o bin/ ./cmd/orch-apiserver ./cmd/orchchaos
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_KILLS) --seed $(CHAOS_SEED)

## chaos-apiserver-64, chaos-apiserver-etcd3: the same kills, CHAOS_APISERVER_KILLS each, under 64
## writing clients on the embedded etcd, and under 8 and then 64 on a 3-member etcd cluster whose
## members are child processes on loopback (~5 minutes together); make chaos runs them first
CHAOS_APISERVER_KILLS ?= 20
chaos: chaos-apiserver-64 chaos-apiserver-etcd3
chaos-apiserver-64:
	$(GO) build -o bin/ ./cmd/orch-apiserver ./cmd/orchchaos
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_APISERVER_KILLS) --seed $(CHAOS_SEED) --clients 64
chaos-apiserver-etcd3:
	$(GO) build -o bin/ ./cmd/orch-apiserver ./cmd/orchchaos
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_APISERVER_KILLS) --seed $(CHAOS_SEED) --etcd-members 3
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_APISERVER_KILLS) --seed $(CHAOS_SEED) --etcd-members 3 --clients 64

## chaos-apiserver-failover: the watcher's resourceVersion compacted while the server is down (410
## Gone, relist) after each of CHAOS_APISERVER_KILLS kills; then two replicas on the 3-member etcd,
## its leader killed or a follower stopped under writes in each of CHAOS_APISERVER_KILLS rounds,
## clients retrying against the other replica (~5 minutes together); make chaos runs it first
chaos: chaos-apiserver-failover
chaos-apiserver-failover:
	$(GO) build -o bin/ ./cmd/orch-apiserver ./cmd/orchchaos
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_APISERVER_KILLS) --seed $(CHAOS_SEED) --etcd-members 3 --compact
	bin/orchchaos --apiserver bin/orch-apiserver --kills $(CHAOS_APISERVER_KILLS) --seed $(CHAOS_SEED) --etcd-members 3 --replicas 2

## chaos-apiserver-exhaust: orch-apiserver held for CHAOS_EXHAUST under 10,000 idle connections,
## bodies that never finish, answers never read, oversized headers and bodies and a storm of 2,000
## watches, /readyz probed every 20 ms and a well-behaved client writing; it fails when /readyz is
## not answered 200 or the client is not served, and prints latency and memory beside, the server's
## heap as its runtime counts it from before the attack to 2 minutes after (needs 11,000 open files);
## CHAOS_PROFILES=<dir> keeps the server's heap profiles, 10 s of its CPU and both sides' runtime
## traces of the attack's first 3 s; as root, the attackers run in a cgroup at a process's CPU weight,
## the server and the bystanders (probe, client) in one of 16 times that, as if the attackers were
## other machines (CHAOS_ATTACKERS_SHARE_CPU=1: all at the server's weight); make chaos runs it first
CHAOS_EXHAUST ?= 120s
CHAOS_PROFILES ?=
CHAOS_ATTACKERS_SHARE_CPU ?=
chaos: chaos-apiserver-exhaust
chaos-apiserver-exhaust:
	$(GO) build -o bin/ ./cmd/orch-apiserver ./cmd/orchchaos
	bin/orchchaos --apiserver bin/orch-apiserver --exhaust $(CHAOS_EXHAUST) --idle 10000 $(if $(CHAOS_PROFILES),--profiles $(CHAOS_PROFILES)) $(if $(CHAOS_ATTACKERS_SHARE_CPU),--attackers-share-cpu)

## chaos-agent: kill -9 orchlet CHAOS_AGENT_KILLS times (seeded by CHAOS_SEED), alternately while
## CHAOS_AGENT_PODS static busybox pods start and while a third of them are deleted, on a containerd
## of its own (root, as e2e-containerd); after each restart the runtime must run every pod once, in
## the sandbox it had, nothing leaked or doubled, within 3 minutes; every pod removed at the end
CHAOS_AGENT_KILLS ?= 10
CHAOS_AGENT_PODS ?= 100
chaos-agent:
	flock /tmp/orch-containerd.lock env ORCH_AGENT_CHAOS_ARGS="--kills $(CHAOS_AGENT_KILLS) --pods $(CHAOS_AGENT_PODS) --seed $(CHAOS_SEED) --max-up 4s" \
		$(GO) test -tags e2e -count=1 -v -timeout 60m -run '^TestAgentKilledOnContainerd$$' ./cmd/orchlet/

## chaos-agent-api: the same kills with orchlet in API-server mode on orch-apiserver (its embedded
## etcd, loopback), the CHAOS_AGENT_PODS pods created bound to its node and deleted through the API;
## after each restart the runtime is judged as above, and in the API every pod that should run must
## be Running and Ready, every deleted one gone, and no container's restart count above 0
chaos-agent-api:
	flock /tmp/orch-containerd.lock env ORCH_AGENT_CHAOS_ARGS="--kills $(CHAOS_AGENT_KILLS) --pods $(CHAOS_AGENT_PODS) --seed $(CHAOS_SEED) --max-up 4s" \
		$(GO) test -tags e2e -count=1 -v -timeout 60m -run '^TestAgentKilledInAPIModeOnContainerd$$' ./cmd/orchlet/

## kubectl: Kubernetes' kubectl into bin/, built from the Go module proxy at the version of orch's
## client libraries (third_party/kubectl, a module of its own); about 2 minutes cold on 2 cores
KUBECTL_VERSION := v1.37.2
kubectl:
	cd third_party/kubectl && $(GO) build -o $(CURDIR)/$(BIN)/kubectl -ldflags "-X k8s.io/component-base/version.gitVersion=$(KUBECTL_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" .

clean:
	rm -rf $(BIN) orch-data reports/*.xml reports/*.json reports/conformance.md reports/scenarios.md
