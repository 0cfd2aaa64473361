package app

import (
	"errors"
	"fmt"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt"
)

// configFiles are the apiserver.config.orch.io/v1 files named on the command line, checked.
type configFiles struct {
	authentication *config.Authentication
	authorization  *config.Authorization
	encryption     *config.Encryption
	admission      *config.Admission
	tracing        *config.Tracing
}

// loadConfigFiles loads every configuration file the options name and reports every problem at
// once: each invalid file with all its errors, and each valid setting this server cannot honour
// yet, because a server that silently ignored an authorizer or an encryption key would be lying
// about its security.
func loadConfigFiles(o *Options) (*configFiles, error) {
	var c configFiles
	var errs []error
	loadConfig(&errs, &c.authentication, "authentication-config", o.AuthenticationConfig, config.LoadAuthentication)
	loadConfig(&errs, &c.authorization, "authorization-config", o.AuthorizationConfig, config.LoadAuthorization)
	loadConfig(&errs, &c.encryption, "encryption-provider-config", o.EncryptionProviderConfig, config.LoadEncryption)
	loadConfig(&errs, &c.admission, "admission-control-config-file", o.AdmissionControlConfigFile, config.LoadAdmission)
	loadConfig(&errs, &c.tracing, "tracing-config-file", o.TracingConfigFile, config.LoadTracing)
	if err := config.CheckAnonymousConflict(c.authentication, o.AnonymousAuthSet); err != nil {
		errs = append(errs, err)
	}
	if o.AuthorizationConfig != "" && o.AuthorizationModeSet {
		errs = append(errs, errors.New("--authorization-config and --authorization-mode are mutually exclusive"))
	}
	errs = append(errs, c.unsupported()...)
	return &c, errors.Join(errs...)
}

// loadConfig loads the file flag names, when it names one, into *into; a failure joins errs under
// the flag's name.
func loadConfig[T any](errs *[]error, into *T, flag, path string, load func(string) (T, error)) {
	if path == "" {
		return
	}
	var err error
	if *into, err = load(path); err != nil {
		*errs = append(*errs, fmt.Errorf("--%s: %w", flag, err))
	}
}

// unsupported names each valid setting that this server cannot enforce yet.
func (c *configFiles) unsupported() []error {
	var errs []error
	if a := c.authentication; a != nil {
		if err := jwt.CheckSupported(a); err != nil {
			errs = append(errs, fmt.Errorf("--authentication-config: %w", err))
		}
	}
	errs = append(errs, c.encryptionUnsupported()...)
	if a := c.admission; a != nil {
		// A plugin orch does not have is refused by name rather than configured for nothing.
		if err := a.CheckRegistered(registeredAdmissionPlugins()); err != nil {
			errs = append(errs, fmt.Errorf("--admission-control-config-file: %w", err))
		}
	}
	return errs
}

// anonymous is the anonymous authenticator the options and files ask for, or nil for none. The
// authentication file's anonymous section, when present, replaces --anonymous-auth.
func (c *configFiles) anonymous(o *Options) authn.Authenticator {
	if a := c.authentication; a != nil && a.Config.Anonymous != nil {
		anon := a.Config.Anonymous
		switch {
		case !anon.Enabled:
			return nil
		case len(anon.Conditions) == 0:
			return authn.Anonymous()
		default:
			paths := make([]string, len(anon.Conditions))
			for i, cond := range anon.Conditions {
				paths[i] = cond.Path
			}
			return authn.AnonymousForPaths(paths)
		}
	}
	if o.AnonymousAuth {
		return authn.Anonymous()
	}
	return nil
}
