package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authz"
)

// authorizationReloadInterval is how often the --authorization-config file is checked for changes,
// as kube-apiserver does.
const authorizationReloadInterval = time.Minute

// buildAuthorizer returns the authorizer of --authorization-config, reloaded from the file as it
// changes until ctx ends, or else of --authorization-mode (with, for mode Node, its link to the
// server). Its metrics go to reg.
func buildAuthorizer(ctx context.Context, o *Options, files *configFiles, clk clock.Clock, reg prometheus.Registerer) (authz.Authorizer, *server.NodeAuthorization, error) {
	if files.authorization == nil {
		return modeAuthorizer(o)
	}
	r, err := newAuthorizationReloader(files.authorization, clk, reg, apiserverID())
	if err != nil {
		return nil, nil, err
	}
	go r.run(ctx)
	if !hasNodeAuthorizer(files.authorization.Config) {
		return r, nil, nil
	}
	return r, r.node, nil
}

// hasNodeAuthorizer tells whether the file names the Node authorizer, which also turns on
// NodeRestriction for the server's lifetime.
func hasNodeAuthorizer(c *apiv1.AuthorizationConfiguration) bool {
	for _, a := range c.Authorizers {
		if a.Type == apiv1.AuthorizerTypeNode {
			return true
		}
	}
	return false
}

// authorizerChain builds the authorizers of a checked AuthorizationConfiguration, asked in file
// order, each counted in the decision metrics under its type and name.
func authorizerChain(a *config.Authorization, clk clock.Clock, metrics *authz.Metrics, node *server.NodeAuthorization) (authz.Authorizer, error) {
	list := make([]authz.Authorizer, 0, len(a.Config.Authorizers))
	for i, c := range a.Config.Authorizers {
		var next authz.Authorizer
		switch c.Type {
		case apiv1.AuthorizerTypeAlwaysAllow:
			next = authz.AlwaysAllow()
		case apiv1.AuthorizerTypeAlwaysDeny:
			next = authz.AlwaysDeny()
		case apiv1.AuthorizerTypeNode:
			next = authz.NodeWithObjects(node.Pod, node.References)
		case apiv1.AuthorizerTypeWebhook:
			var err error
			if next, err = webhookAuthorizer(c.Name, c.Webhook, a.MatchConditions[i], clk, metrics); err != nil {
				return nil, fmt.Errorf("--authorization-config %s: authorizers[%d] (%s %q): %w", a.File, i, c.Type, c.Name, err)
			}
		default:
			// The loader refuses other types; this guards against the two lists drifting apart.
			return nil, fmt.Errorf("--authorization-config %s: authorizers[%d]: type %q has no authorizer", a.File, i, c.Type)
		}
		list = append(list, authz.Instrumented(c.Type, c.Name, next, metrics))
	}
	return authz.Union(list...), nil
}

func webhookAuthorizer(name string, w *apiv1.WebhookConfiguration, conditions []*config.Program, clk clock.Clock, metrics *authz.Metrics) (authz.Authorizer, error) {
	// The loader refuses every connection type but KubeConfigFile and resolves its path.
	client, url, err := authz.WebhookConnection(*w.ConnectionInfo.KubeConfigFile)
	if err != nil {
		return nil, err
	}
	authorizedTTL, unauthorizedTTL := w.AuthorizedTTL.Duration, w.UnauthorizedTTL.Duration
	if !*w.CacheAuthorizedRequests {
		authorizedTTL = 0
	}
	if !*w.CacheUnauthorizedRequests {
		unauthorizedTTL = 0
	}
	onError := authz.DecisionNoOpinion
	if w.FailurePolicy == apiv1.FailurePolicyDeny {
		onError = authz.DecisionDeny
	}
	o := authz.WebhookOptions{
		Name: name, Client: client, URL: url, Clock: clk, Version: w.SubjectAccessReviewVersion,
		AuthorizedTTL: authorizedTTL, UnauthorizedTTL: unauthorizedTTL, Timeout: w.Timeout.Duration,
		DecisionOnError: onError, Metrics: metrics,
	}
	if len(conditions) > 0 {
		o.MatchConditions = config.MatchConditions(conditions)
	}
	return authz.NewWebhook(o)
}

// authorizationReloader is the authorizer of an --authorization-config file, rebuilt when the file
// changes: a valid new file replaces the whole chain at once, so each request sees one chain or
// the other; an invalid one is logged and the chain kept.
type authorizationReloader struct {
	file    string
	clk     clock.Clock
	metrics *authz.Metrics
	current atomic.Pointer[authz.Authorizer]
	// node links a Node authorizer to the server's pods, across reloads.
	node *server.NodeAuthorization

	// Kubernetes' reload metrics, labelled with a hash of the server's identity.
	reloads    *prometheus.CounterVec
	lastReload *prometheus.GaugeVec
	idHash     string

	// Touched by check only, which runs on one goroutine. lastData is nil until the first read:
	// an empty file then is content to check like any other.
	lastData   []byte
	lastConfig *apiv1.AuthorizationConfiguration
}

func newAuthorizationReloader(a *config.Authorization, clk clock.Clock, reg prometheus.Registerer, serverID string) (*authorizationReloader, error) {
	r := &authorizationReloader{
		file:    a.File,
		clk:     clk,
		metrics: authz.NewMetrics(reg),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_config_controller_automatic_reloads_total",
			Help: "Total number of automatic reloads of authorization configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		lastReload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds",
			Help: "Timestamp of the last automatic reload of authorization configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		idHash:     idHash(serverID),
		lastConfig: a.Config,
		node:       &server.NodeAuthorization{},
	}
	reg.MustRegister(r.reloads, r.lastReload)
	chain, err := authorizerChain(a, clk, r.metrics, r.node)
	if err != nil {
		return nil, err
	}
	r.current.Store(&chain)
	return r, nil
}

func (r *authorizationReloader) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	return (*r.current.Load()).Authorize(ctx, a)
}

// run checks the file every authorizationReloadInterval on the clock until ctx ends. The loaded
// file counts as the first successful load, as in Kubernetes.
func (r *authorizationReloader) run(ctx context.Context) {
	r.recordReload("success")
	ticker := r.clk.Ticker(authorizationReloadInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			r.check()
		}
	}
}

// check reloads the file if its content changed. A file that cannot be read, loaded or built is a
// failed reload; one that reads the same as before, or means the same, is no reload at all.
func (r *authorizationReloader) check() {
	data, err := os.ReadFile(r.file)
	if err != nil {
		klog.ErrorS(err, "Reloading the authorization configuration; keeping the current authorizers", "file", r.file)
		r.recordReload("failure")
		return
	}
	if r.lastData != nil && bytes.Equal(data, r.lastData) {
		return
	}
	r.lastData = data
	loaded, err := config.ParseAuthorization(r.file, data)
	if err != nil {
		klog.ErrorS(err, "Reloading the authorization configuration; keeping the current authorizers", "file", r.file)
		r.recordReload("failure")
		return
	}
	if reflect.DeepEqual(loaded.Config, r.lastConfig) {
		return
	}
	if hasNodeAuthorizer(loaded.Config) != hasNodeAuthorizer(r.lastConfig) {
		// NodeRestriction is on or off for the server's lifetime, with the Node authorizer.
		klog.ErrorS(nil, "Reloading the authorization configuration; keeping the current authorizers: the Node authorizer is added or removed only by a restart", "file", r.file)
		r.recordReload("failure")
		return
	}
	chain, err := authorizerChain(loaded, r.clk, r.metrics, r.node)
	if err != nil {
		klog.ErrorS(err, "Reloading the authorization configuration; keeping the current authorizers", "file", r.file)
		r.recordReload("failure")
		return
	}
	r.lastConfig = loaded.Config
	r.current.Store(&chain)
	klog.InfoS("Reloaded the authorization configuration", "file", r.file, "authorizers", len(loaded.Config.Authorizers))
	r.recordReload("success")
}

func (r *authorizationReloader) recordReload(status string) {
	r.reloads.WithLabelValues(status, r.idHash).Inc()
	r.lastReload.WithLabelValues(status, r.idHash).Set(float64(r.clk.Now().UnixNano()) / 1e9)
}

// apiserverID is the server's identity as Kubernetes derives it: stable across restarts on one
// host, distinct between hosts; empty when the host name is unknown.
func apiserverID() string {
	hostname, err := os.Hostname()
	if err != nil {
		return ""
	}
	var data []byte
	for _, s := range []string{hostname, "orch-apiserver"} {
		data = binary.BigEndian.AppendUint16(data, uint16(len(s)))
		data = append(data, s...)
	}
	sum := sha256.Sum256(data)
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// idHash is the apiserver_id_hash label of an identity.
func idHash(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(id)))
}
