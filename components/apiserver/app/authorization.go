package app

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
	"orch.io/orch/components/reload"
)

// authorizationReloadInterval is how often the --authorization-config file is checked for changes,
// as kube-apiserver does.
const authorizationReloadInterval = time.Minute

// buildAuthorizer returns the authorizer of --authorization-config, reloaded from the file as it
// changes until ctx ends, or else of --authorization-mode (with, for mode Node, its link to the
// server). Its metrics go to reg. An RBAC authorizer reads roles, which the server keeps.
func buildAuthorizer(ctx context.Context, o *Options, files *configFiles, clk clock.Clock, reg prometheus.Registerer, roles *rbac.Index) (authz.Authorizer, *server.NodeAuthorization, error) {
	if files.authorization == nil {
		return modeAuthorizer(o, roles)
	}
	r, err := newAuthorizationReloader(files.authorization, clk, reg, apiserverID(), roles)
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
func authorizerChain(a *config.Authorization, clk clock.Clock, metrics *authz.Metrics, node *server.NodeAuthorization, roles *rbac.Index) (authz.Authorizer, error) {
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
		case apiv1.AuthorizerTypeRBAC:
			next = rbac.Authorizer(roles)
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
// the other; an invalid one is logged and the chain kept. A file that reads differently but means
// the same is no reload.
type authorizationReloader struct {
	*reload.Reloader[authorizers]
	clk     clock.Clock
	metrics *reload.Metrics
	// node links a Node authorizer to the server's pods, across reloads.
	node *server.NodeAuthorization
}

// authorizers are the chain of one file, with the configuration it was built from.
type authorizers struct {
	authz.Authorizer
	config *apiv1.AuthorizationConfiguration
}

// errNodeChanged refuses a file that adds or removes the Node authorizer: NodeRestriction is on or
// off for the server's lifetime, with it.
var errNodeChanged = errors.New("the Node authorizer is added or removed only by a restart")

func newAuthorizationReloader(a *config.Authorization, clk clock.Clock, reg prometheus.Registerer, serverID string, roles *rbac.Index) (*authorizationReloader, error) {
	decisions := authz.NewMetrics(reg)
	metrics, err := reload.NewMetrics(reg, "authorization", serverID, false)
	if err != nil {
		return nil, err
	}
	node := &server.NodeAuthorization{}
	chain, err := authorizerChain(a, clk, decisions, node, roles)
	if err != nil {
		return nil, err
	}
	file := a.File
	r := reload.New(reload.Options[authorizers]{
		File: file, Interval: authorizationReloadInterval, Clock: clk, Metrics: metrics,
		Load: func(_ context.Context, data []byte, current *authorizers) (*authorizers, error) {
			loaded, err := config.ParseAuthorization(file, data)
			if err != nil {
				return nil, err
			}
			if reflect.DeepEqual(loaded.Config, current.config) {
				return nil, reload.ErrSameMeaning
			}
			if hasNodeAuthorizer(loaded.Config) != hasNodeAuthorizer(current.config) {
				return nil, errNodeChanged
			}
			chain, err := authorizerChain(loaded, clk, decisions, node, roles)
			if err != nil {
				return nil, err
			}
			return &authorizers{chain, loaded.Config}, nil
		},
		Log: func(o reload.Outcome[authorizers]) {
			const failed = "Reloading the authorization configuration; keeping the current authorizers"
			switch {
			case o.Err == nil:
				klog.InfoS("Reloaded the authorization configuration", "file", file, "authorizers", len(o.Value.config.Authorizers))
			case errors.Is(o.Err, errNodeChanged):
				klog.ErrorS(nil, failed+": "+o.Err.Error(), "file", file)
			default:
				klog.ErrorS(o.Err, failed, "file", file)
			}
		},
	}, &authorizers{chain, a.Config}, nil)
	return &authorizationReloader{Reloader: r, clk: clk, metrics: metrics, node: node}, nil
}

func (r *authorizationReloader) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	return r.Current().Authorize(ctx, a)
}

// RulesFor lists the current chain's rules.
func (r *authorizationReloader) RulesFor(ctx context.Context, user *authn.UserInfo, namespace string) (authz.Rules, error) {
	return authz.RulesFor(ctx, r.Current().Authorizer, user, namespace)
}

// run checks the file every authorizationReloadInterval on the clock until ctx ends. The loaded
// file counts as the first successful load, as in Kubernetes.
func (r *authorizationReloader) run(ctx context.Context) {
	r.metrics.Record(reload.Success, r.clk.Now())
	r.Run(ctx)
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
