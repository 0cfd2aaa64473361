package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// KMS defaults from SPEC.md.
const (
	defaultKMSCacheSize int32 = 1000
	defaultKMSTimeout         = 3 * time.Second
)

// Key sizes in bytes, after base64 decoding, from SPEC.md.
var (
	aescbcKeySizes    = []int{32}
	aesgcmKeySizes    = []int{16, 24, 32}
	secretboxKeySizes = []int{32}
)

// Encryption is a checked EncryptionConfiguration.
type Encryption struct {
	File   string
	Config *apiv1.EncryptionConfiguration
}

// LoadEncryption reads, defaults and validates an EncryptionConfiguration file.
func LoadEncryption(path string) (*Encryption, error) { return loadFile(path, ParseEncryption) }

// ParseEncryption is LoadEncryption for bytes already read; name is used in errors.
func ParseEncryption(name string, data []byte) (*Encryption, error) {
	cfg, err := parseKind(name, data, apiv1.KindEncryptionConfiguration, func(cfg *apiv1.EncryptionConfiguration) field.ErrorList {
		defaultEncryption(cfg)
		return validateEncryption(cfg)
	})
	if err != nil {
		return nil, err
	}
	return &Encryption{File: name, Config: cfg}, nil
}

// isKMSv1 treats an unset KMS apiVersion as v1, as Kubernetes does.
func isKMSv1(k *apiv1.KMSConfiguration) bool {
	return k.APIVersion == "" || k.APIVersion == "v1"
}

func defaultEncryption(c *apiv1.EncryptionConfiguration) {
	for i := range c.Resources {
		for _, p := range c.Resources[i].Providers {
			k := p.KMS
			if k == nil {
				continue
			}
			if k.CacheSize == nil && isKMSv1(k) {
				k.CacheSize = new(defaultKMSCacheSize)
			}
			if k.Timeout == nil {
				k.Timeout = &metav1.Duration{Duration: defaultKMSTimeout}
			}
		}
	}
}

const (
	overlapErr            = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
	starResourceErr       = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
	resourceNameErr       = "resource name should not contain capital letters"
	resourceAcrossGroup   = "encrypting the same resource across groups is not supported"
	resourceSyntaxErr     = "must be resource or resource.group, or one of the wildcards *.*, *.group, *."
	duplicateResourceErr  = "the same resource cannot be specified multiple times"
	moreThanOneProvider   = "more than one provider specified in a single element, should split into different list elements"
	noProvider            = "exactly one of aesgcm, aescbc, secretbox, identity or kms must be set"
	base64EncodingErr     = "secrets must be base64 encoded"
	keyLenErrFmt          = "secret is not of the expected length, got %d, expected one of %v"
	anyGroupAnyResourceGR = "*.*"
)

func validateEncryption(c *apiv1.EncryptionConfiguration) field.ErrorList {
	root := field.NewPath("resources")
	if len(c.Resources) == 0 {
		return field.ErrorList{field.Required(root, "at least one resource configuration is required")}
	}
	var errs field.ErrorList
	// earlier maps each group-resource of earlier entries to its spelling, to find masked resources.
	earlier := map[schema.GroupResource]string{}
	kmsNames := sets.New[string]()
	for i, rc := range c.Resources {
		rp := root.Index(i).Child("resources")
		pp := root.Index(i).Child("providers")
		if len(rc.Resources) == 0 {
			errs = append(errs, field.Required(rp, "at least one resource is required"))
		}
		errs = append(errs, validateResourceNames(rc.Resources, rp)...)
		errs = append(errs, validateResourceOverlap(rc.Resources, rp)...)
		errs = append(errs, validateMasking(rc.Resources, rp, earlier)...)
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			if _, ok := earlier[gr]; !ok {
				earlier[gr] = r
			}
		}
		if len(rc.Providers) == 0 {
			errs = append(errs, field.Required(pp, "at least one provider is required"))
		}
		for j, prov := range rc.Providers {
			errs = append(errs, validateProvider(prov, pp.Index(j), kmsNames)...)
		}
	}
	return errs
}

func validateResourceNames(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	next := nextOccurrence(resources)
	for j, res := range resources {
		jp := p.Index(j)
		gr := schema.ParseGroupResource(res)
		switch {
		case res != strings.ToLower(res):
			errs = append(errs, field.Invalid(jp, res, resourceNameErr))
			continue
		case res == "*":
			errs = append(errs, field.Invalid(jp, res, starResourceErr))
			continue
		case gr.Group == "*" && gr.Resource != "*":
			errs = append(errs, field.Invalid(jp, res, resourceAcrossGroup))
			continue
		case !validResourceSyntax(gr):
			errs = append(errs, field.Invalid(jp, res, resourceSyntaxErr))
			continue
		}
		if k, ok := next[j]; ok {
			errs = append(errs, field.Invalid(jp, res, fmt.Sprintf("%s: %s", duplicateResourceErr, p.Index(k))))
		}
	}
	return errs
}

// nextOccurrence maps each index of list to the index where the same value next appears, in one
// pass, so long lists cost no more than their length.
func nextOccurrence(list []string) map[int]int {
	next := map[int]int{}
	last := map[string]int{}
	for k := len(list) - 1; k >= 0; k-- {
		if j, ok := last[list[k]]; ok {
			next[k] = j
		}
		last[list[k]] = k
	}
	return next
}

// validResourceSyntax accepts a DNS label or * as resource and a DNS subdomain, * or nothing as group.
func validResourceSyntax(gr schema.GroupResource) bool {
	if gr.Resource != "*" && len(utilvalidation.IsDNS1123Label(gr.Resource)) > 0 {
		return false
	}
	return gr.Group == "" || gr.Group == "*" || len(utilvalidation.IsDNS1123Subdomain(gr.Group)) == 0
}

// validateResourceOverlap refuses a list where a wildcard covers another entry of the same list:
// *.* beside anything else, or *.group beside another entry of that group.
func validateResourceOverlap(resources []string, p *field.Path) field.ErrorList {
	distinct := sets.New(resources...)
	perGroup := map[string]int{}
	wildcardGroups := sets.New[string]()
	for r := range distinct {
		gr := schema.ParseGroupResource(r)
		perGroup[gr.Group]++
		if gr.Resource == "*" {
			wildcardGroups.Insert(gr.Group)
		}
	}
	overlap := distinct.Has(anyGroupAnyResourceGR) && distinct.Len() > 1
	for g := range wildcardGroups {
		overlap = overlap || perGroup[g] > 1
	}
	if overlap {
		return field.ErrorList{field.Invalid(p, resources, overlapErr)}
	}
	return nil
}

// validateMasking refuses a resource an earlier entry already covers, by the same name, by its
// group's wildcard or by *.*: the later entry could never apply to it.
func validateMasking(resources []string, p *field.Path, earlier map[schema.GroupResource]string) field.ErrorList {
	var errs field.ErrorList
	for j, r := range resources {
		gr := schema.ParseGroupResource(r)
		for _, mask := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
			if spelled, ok := earlier[mask]; ok {
				errs = append(errs, field.Invalid(p.Index(j), r, fmt.Sprintf("resource %q is masked by earlier rule %q", r, spelled)))
				break
			}
		}
	}
	return errs
}

func validateProvider(prov apiv1.ProviderConfiguration, p *field.Path, kmsNames sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	var set []string
	if prov.AESGCM != nil {
		set = append(set, "aesgcm")
		errs = append(errs, validateKeys(prov.AESGCM.Keys, p.Child("aesgcm", "keys"), aesgcmKeySizes)...)
	}
	if prov.AESCBC != nil {
		set = append(set, "aescbc")
		errs = append(errs, validateKeys(prov.AESCBC.Keys, p.Child("aescbc", "keys"), aescbcKeySizes)...)
	}
	if prov.Secretbox != nil {
		set = append(set, "secretbox")
		errs = append(errs, validateKeys(prov.Secretbox.Keys, p.Child("secretbox", "keys"), secretboxKeySizes)...)
	}
	if prov.Identity != nil {
		set = append(set, "identity")
	}
	if prov.KMS != nil {
		set = append(set, "kms")
		errs = append(errs, validateKMS(prov.KMS, p.Child("kms"), kmsNames)...)
	}
	switch len(set) {
	case 0:
		errs = append(field.ErrorList{field.Required(p, noProvider)}, errs...)
	case 1:
	default:
		errs = append(field.ErrorList{field.Invalid(p, strings.Join(set, ", "), moreThanOneProvider)}, errs...)
	}
	return errs
}

func validateKeys(keys []apiv1.Key, p *field.Path, sizes []int) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(p, "at least one key is required")}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, k := range keys {
		kp := p.Index(i)
		switch {
		case k.Name == "":
			errs = append(errs, field.Required(kp.Child("name"), "name is a mandatory field for a key"))
		case seen.Has(k.Name):
			errs = append(errs, field.Duplicate(kp.Child("name"), k.Name))
		}
		seen.Insert(k.Name)
		if k.Secret == "" {
			errs = append(errs, field.Required(kp.Child("secret"), "secret is a mandatory field for a key"))
			continue
		}
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			errs = append(errs, field.Invalid(kp.Child("secret"), "REDACTED", base64EncodingErr))
			continue
		}
		if !slices.Contains(sizes, len(secret)) {
			errs = append(errs, field.Invalid(kp.Child("secret"), "REDACTED", fmt.Sprintf(keyLenErrFmt, len(secret), sizes)))
		}
	}
	return errs
}

func validateKMS(k *apiv1.KMSConfiguration, p *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch k.APIVersion {
	case "", "v1", "v2":
	default:
		errs = append(errs, field.NotSupported(p.Child("apiVersion"), k.APIVersion, []string{"v1", "v2"}))
	}
	np := p.Child("name")
	switch {
	case k.Name == "":
		errs = append(errs, field.Required(np, "name is a mandatory field for a KMS provider"))
	case names.Has(k.Name):
		errs = append(errs, field.Invalid(np, k.Name, fmt.Sprintf("duplicate KMS provider name %s, names must be unique", k.Name)))
	case !isKMSv1(k) && strings.Contains(k.Name, ":"):
		errs = append(errs, field.Invalid(np, k.Name, fmt.Sprintf("invalid KMS provider name %s, must not contain ':'", k.Name)))
	}
	names.Insert(k.Name)
	cp := p.Child("cachesize")
	switch {
	case !isKMSv1(k) && k.CacheSize != nil:
		errs = append(errs, field.Invalid(cp, *k.CacheSize, "cachesize is not supported in v2"))
	case isKMSv1(k) && k.CacheSize != nil && *k.CacheSize == 0:
		errs = append(errs, field.Invalid(cp, *k.CacheSize, "cachesize should be a positive value, or negative to disable"))
	}
	errs = append(errs, validateKMSEndpoint(k.Endpoint, p.Child("endpoint"))...)
	if k.Timeout != nil && k.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), k.Timeout.Duration.String(), "timeout should be a positive value"))
	}
	return errs
}

func validateKMSEndpoint(endpoint string, p *field.Path) field.ErrorList {
	if endpoint == "" {
		return field.ErrorList{field.Required(p, "endpoint is a mandatory field for a KMS provider")}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return field.ErrorList{field.Invalid(p, endpoint, fmt.Sprintf("invalid endpoint for kms provider, error: %v", err))}
	}
	if u.Scheme != "unix" {
		return field.ErrorList{field.Invalid(p, endpoint, fmt.Sprintf("unsupported scheme %q for KMS provider, only unix is supported", u.Scheme))}
	}
	if u.Path == "" && u.Host == "" {
		return field.ErrorList{field.Invalid(p, endpoint, "must name a unix socket, for example unix:///var/run/kms.sock")}
	}
	return nil
}
