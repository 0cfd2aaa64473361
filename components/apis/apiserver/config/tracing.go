package config

import (
	"errors"
	"net"
	"strconv"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

const maxSamplingRatePerMillion = 1000000

// Tracing is a checked TracingConfiguration.
type Tracing struct {
	File   string
	Config *apiv1.TracingConfiguration
}

// LoadTracing reads and validates a TracingConfiguration file.
func LoadTracing(path string) (*Tracing, error) { return loadFile(path, ParseTracing) }

// ParseTracing is LoadTracing for bytes already read; name is used in errors.
func ParseTracing(name string, data []byte) (*Tracing, error) {
	cfg, err := parseKind(name, data, apiv1.KindTracingConfiguration, validateTracing)
	if err != nil {
		return nil, err
	}
	return &Tracing{File: name, Config: cfg}, nil
}

func validateTracing(c *apiv1.TracingConfiguration) field.ErrorList {
	var errs field.ErrorList
	if r := c.SamplingRatePerMillion; r != nil {
		p := field.NewPath("samplingRatePerMillion")
		switch {
		case *r < 0:
			errs = append(errs, field.Invalid(p, *r, "sampling rate must be positive"))
		case *r > maxSamplingRatePerMillion:
			errs = append(errs, field.Invalid(p, *r, "sampling rate per million must be less than or equal to one million"))
		}
	}
	if e := c.Endpoint; e != nil {
		if reason := hostPortReason(*e); reason != "" {
			errs = append(errs, field.Invalid(field.NewPath("endpoint"), *e, reason))
		}
	}
	return errs
}

// hostPortReason says why endpoint is not a host:port address, or returns "".
func hostPortReason(endpoint string) string {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		reason := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			reason = ae.Err
		}
		return "must be a host:port address: " + reason
	}
	if host == "" {
		return "must be a host:port address: missing host"
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "must be a host:port address: port must be a number"
	}
	if msgs := utilvalidation.IsValidPortNum(n); len(msgs) > 0 {
		return "must be a host:port address: port " + msgs[0]
	}
	return ""
}
