package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// Webhook defaults and limits from SPEC.md.
const (
	defaultAuthorizedTTL   = 5 * time.Minute
	defaultUnauthorizedTTL = 30 * time.Second
	maxWebhookTimeout      = 30 * time.Second
	maxMatchConditions     = 64
)

// authorizerTypes are the types orch-apiserver builds, in the order its errors list them.
var authorizerTypes = []string{apiv1.AuthorizerTypeAlwaysAllow, apiv1.AuthorizerTypeAlwaysDeny, apiv1.AuthorizerTypeNode, apiv1.AuthorizerTypeRBAC, apiv1.AuthorizerTypeWebhook}

// Authorization is a checked AuthorizationConfiguration with its compiled match conditions.
// Relative kubeConfigFile paths in Config have been resolved against the file's directory.
type Authorization struct {
	File   string
	Config *apiv1.AuthorizationConfiguration
	// MatchConditions holds, index for index with Config.Authorizers, the programs of each webhook's
	// matchConditions; nil for authorizers without a webhook.
	MatchConditions [][]*Program
}

// LoadAuthorization reads, defaults, validates and compiles an AuthorizationConfiguration file.
func LoadAuthorization(path string) (*Authorization, error) {
	return loadFile(path, ParseAuthorization)
}

// ParseAuthorization is LoadAuthorization for bytes already read; name is used in errors and its
// directory anchors relative kubeConfigFile paths.
func ParseAuthorization(name string, data []byte) (*Authorization, error) {
	var programs [][]*Program
	cfg, err := parseKind(name, data, apiv1.KindAuthorizationConfiguration, func(cfg *apiv1.AuthorizationConfiguration) (errs field.ErrorList) {
		defaultAuthorization(cfg)
		programs, errs = validateAuthorization(newCompiler(), cfg, filepath.Dir(name))
		return errs
	})
	if err != nil {
		return nil, err
	}
	return &Authorization{File: name, Config: cfg, MatchConditions: programs}, nil
}

func defaultAuthorization(c *apiv1.AuthorizationConfiguration) {
	for i := range c.Authorizers {
		w := c.Authorizers[i].Webhook
		if w == nil {
			continue
		}
		if w.AuthorizedTTL.Duration == 0 {
			w.AuthorizedTTL = metav1.Duration{Duration: defaultAuthorizedTTL}
		}
		if w.UnauthorizedTTL.Duration == 0 {
			w.UnauthorizedTTL = metav1.Duration{Duration: defaultUnauthorizedTTL}
		}
		if w.CacheAuthorizedRequests == nil {
			w.CacheAuthorizedRequests = new(true)
		}
		if w.CacheUnauthorizedRequests == nil {
			w.CacheUnauthorizedRequests = new(true)
		}
	}
}

func validateAuthorization(cc *compiler, c *apiv1.AuthorizationConfiguration, baseDir string) ([][]*Program, field.ErrorList) {
	root := field.NewPath("authorizers")
	if len(c.Authorizers) == 0 {
		return nil, field.ErrorList{field.Required(root, "at least one authorizer must be defined")}
	}
	var errs field.ErrorList
	programs := make([][]*Program, len(c.Authorizers))
	seenNames, seenTypes := sets.New[string](), sets.New[string]()
	for i := range c.Authorizers {
		a := &c.Authorizers[i]
		p := root.Index(i)
		switch {
		case a.Type == "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		case !slices.Contains(authorizerTypes, a.Type):
			errs = append(errs, field.NotSupported(p.Child("type"), a.Type, authorizerTypes))
		case a.Type != apiv1.AuthorizerTypeWebhook && seenTypes.Has(a.Type):
			// Only webhooks repeat: a second built-in authorizer could never be reached.
			errs = append(errs, field.Duplicate(p.Child("type"), a.Type))
		}
		seenTypes.Insert(a.Type)
		switch {
		case a.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case seenNames.Has(a.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), a.Name))
		default:
			if msgs := utilvalidation.IsDNS1123Subdomain(a.Name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("name"), a.Name, "authorizer name is invalid: "+strings.Join(msgs, ", ")))
			}
		}
		seenNames.Insert(a.Name)
		switch {
		case a.Type == apiv1.AuthorizerTypeWebhook && a.Webhook == nil:
			errs = append(errs, field.Required(p.Child("webhook"), "required when type=Webhook"))
		case a.Type != apiv1.AuthorizerTypeWebhook && a.Webhook != nil:
			errs = append(errs, field.Invalid(p.Child("webhook"), "non-null", "may only be specified when type=Webhook"))
		case a.Webhook != nil:
			var werrs field.ErrorList
			programs[i], werrs = validateWebhook(cc, a.Webhook, p.Child("webhook"), baseDir)
			errs = append(errs, werrs...)
		}
	}
	return programs, errs
}

func validateWebhook(cc *compiler, w *apiv1.WebhookConfiguration, p *field.Path, baseDir string) ([]*Program, field.ErrorList) {
	var errs field.ErrorList
	switch d := w.Timeout.Duration; {
	case d == 0:
		errs = append(errs, field.Required(p.Child("timeout"), ""))
	case d < 0 || d > maxWebhookTimeout:
		errs = append(errs, field.Invalid(p.Child("timeout"), d.String(), "must be > 0s and <= 30s"))
	}
	if d := w.AuthorizedTTL.Duration; d < 0 {
		errs = append(errs, field.Invalid(p.Child("authorizedTTL"), d.String(), "must be > 0s"))
	}
	if d := w.UnauthorizedTTL.Duration; d < 0 {
		errs = append(errs, field.Invalid(p.Child("unauthorizedTTL"), d.String(), "must be > 0s"))
	}
	switch w.SubjectAccessReviewVersion {
	case "":
		errs = append(errs, field.Required(p.Child("subjectAccessReviewVersion"), ""))
	case "v1", "v1beta1":
	default:
		errs = append(errs, field.NotSupported(p.Child("subjectAccessReviewVersion"), w.SubjectAccessReviewVersion, []string{"v1", "v1beta1"}))
	}
	switch w.MatchConditionSubjectAccessReviewVersion {
	case "":
		errs = append(errs, field.Required(p.Child("matchConditionSubjectAccessReviewVersion"), ""))
	case "v1":
	default:
		errs = append(errs, field.NotSupported(p.Child("matchConditionSubjectAccessReviewVersion"), w.MatchConditionSubjectAccessReviewVersion, []string{"v1"}))
	}
	switch w.FailurePolicy {
	case "":
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	case apiv1.FailurePolicyNoOpinion, apiv1.FailurePolicyDeny:
	default:
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), w.FailurePolicy, []string{apiv1.FailurePolicyNoOpinion, apiv1.FailurePolicyDeny}))
	}
	errs = append(errs, validateConnectionInfo(&w.ConnectionInfo, p.Child("connectionInfo"), baseDir)...)
	programs, cerrs := compileMatchConditions(cc, w.MatchConditions, p.Child("matchConditions"))
	return programs, append(errs, cerrs...)
}

// validateConnectionInfo checks how the webhook is reached, resolving a relative kubeConfigFile
// against baseDir in place.
func validateConnectionInfo(ci *apiv1.WebhookConnectionInfo, p *field.Path, baseDir string) field.ErrorList {
	kp := p.Child("kubeConfigFile")
	switch ci.Type {
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "")}
	case apiv1.ConnectionInfoTypeInClusterConfig:
		errs := field.ErrorList{field.Invalid(p.Child("type"), ci.Type, "InClusterConfig is not allowed for the API server itself; use KubeConfigFile")}
		if ci.KubeConfigFile != nil {
			errs = append(errs, field.Invalid(kp, *ci.KubeConfigFile, "can only be set when type=KubeConfigFile"))
		}
		return errs
	case apiv1.ConnectionInfoTypeKubeConfigFile:
		if ci.KubeConfigFile == nil || *ci.KubeConfigFile == "" {
			return field.ErrorList{field.Required(kp, "required when type=KubeConfigFile")}
		}
		given := *ci.KubeConfigFile
		path := given
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, path)
		}
		info, err := os.Stat(path)
		switch {
		case err != nil:
			return field.ErrorList{field.Invalid(kp, given, fmt.Sprintf("error loading file: %v", statReason(err)))}
		case !info.Mode().IsRegular():
			return field.ErrorList{field.Invalid(kp, given, "must be a regular file")}
		}
		ci.KubeConfigFile = &path
		return nil
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), ci.Type, []string{apiv1.ConnectionInfoTypeKubeConfigFile})}
	}
}

// statReason drops the path from a stat error: the field value already shows it.
func statReason(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func compileMatchConditions(cc *compiler, conds []apiv1.WebhookMatchCondition, p *field.Path) ([]*Program, field.ErrorList) {
	if len(conds) > maxMatchConditions {
		return nil, field.ErrorList{field.TooMany(p, len(conds), maxMatchConditions)}
	}
	exprs := make([]string, len(conds))
	for i, c := range conds {
		exprs[i] = c.Expression
	}
	return compileBoolExpressions(cc, requestVar, exprs, p, "")
}
