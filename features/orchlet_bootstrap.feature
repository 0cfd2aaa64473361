@component:agent @component:runtime @component:apiserver-start
Feature: Node agent certificate bootstrap and rotation
  Without its --orchconfig file, the node agent requests a client certificate with the credentials
  of --bootstrap-kubeconfig; the API server approves node client requests and signs them with its
  cluster CA. The agent stores the certificate under --cert-dir and writes --orchconfig to use it.
  With --rotate-certificates it renews the client certificate before it expires, and with
  --rotate-server-certificates it requests its serving certificate, which a person approves.

  Background:
    Given a container runtime
    And a certificate authority "cluster-ca"
    And a token file with the users "bootstrapper"

  @rule:authn.agent.bootstrap
  Scenario: The agent bootstraps a client certificate and registers its node with it
    Given the API server is started with "--token-auth-file={dir}/tokens.csv --client-ca-file={dir}/certs/cluster-ca.crt --cluster-signing-cert-file={dir}/certs/cluster-ca.crt --cluster-signing-key-file={dir}/certs/cluster-ca.key --authorization-mode=Node,AlwaysAllow --anonymous-auth=false"
    When the agent bootstraps against the scenario's API server as "bootstrapper" with ""
    Then the scenario's API server has the agent's node
    And "{dir}/pki/orchlet-client-current.pem" holds a client certificate for "system:node:node-conformance" signed by "cluster-ca"
    And the --orchconfig file the agent wrote uses "{dir}/pki/orchlet-client-current.pem"
    And the scenario's API server has an approved node client request from "bootstrapper"

  @rule:authn.agent.certificate-rotation
  Scenario: --rotate-certificates renews the client certificate before it expires
    Given the API server is started with "--token-auth-file={dir}/tokens.csv --client-ca-file={dir}/certs/cluster-ca.crt --cluster-signing-cert-file={dir}/certs/cluster-ca.crt --cluster-signing-key-file={dir}/certs/cluster-ca.key --cluster-signing-duration=1m --authorization-mode=Node,AlwaysAllow --anonymous-auth=false"
    When the agent bootstraps against the scenario's API server as "bootstrapper" with "--rotate-certificates"
    Then the agent's client certificate is renewed within 90 seconds
    And "{dir}/pki/orchlet-client-current.pem" holds a client certificate for "system:node:node-conformance" signed by "cluster-ca"
    And the scenario's API server has the agent's node

  @rule:authn.agent.certificate-rotation
  Scenario: --rotate-server-certificates serves the certificate the API server issued once approved
    Given the API server is started with "--token-auth-file={dir}/tokens.csv --client-ca-file={dir}/certs/cluster-ca.crt --cluster-signing-cert-file={dir}/certs/cluster-ca.crt --cluster-signing-key-file={dir}/certs/cluster-ca.key --authorization-mode=Node,AlwaysAllow --anonymous-auth=false"
    When the agent bootstraps against the scenario's API server as "bootstrapper" with "--rotate-server-certificates"
    Then the scenario's API server has a pending serving request from "system:node:node-conformance"
    And the HTTPS server presents no certificate
    When the serving request is approved through the scenario's API server
    Then the HTTPS server presents a certificate for "system:node:node-conformance" signed by "cluster-ca"
    And the HTTPS server presents a certificate stored under "{dir}/pki"
