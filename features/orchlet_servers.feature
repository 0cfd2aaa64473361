@component:agent @component:runtime
Feature: Node agent servers
  The node agent serves an HTTPS server, which authenticates and authorizes every
  request, a read-only server, which does neither, and a health server. Options turn each off, pick
  the serving certificate, admit client certificates and limit idle connections.

  Background:
    Given a container runtime
    And the manifest "web.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """

  @rule:service.agent.servers
  Scenario: The agent serves its HTTPS, read-only and health servers
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And the HTTPS server answers GET "/pods" with 200
    And the read-only server answers GET "/pods" with 200
    And the health server answers GET "/healthz" with 200 "ok"

  @rule:authn.agent.anonymous
  Scenario: A request without credentials is anonymous and allowed by default
    When the agent runs with ""
    Then the HTTPS server answers GET "/pods" with 200

  @rule:authn.agent.anonymous
  Scenario: Without --anonymous-auth a request without credentials is unauthorized
    When the agent runs with "--anonymous-auth=false"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"

  @rule:authn.agent.client-ca
  Scenario: A client certificate signed by the --client-ca-file authority authenticates
    Given a certificate authority "ca"
    And a client certificate "alice" signed by "ca"
    And a certificate authority "other"
    And a client certificate "mallory" signed by "other"
    When the agent runs with "--anonymous-auth=false --client-ca-file={certs}/ca.crt"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"
    When requests carry the client certificate "alice"
    Then the HTTPS server answers GET "/pods" with 200
    When requests carry the client certificate "mallory"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"

  @rule:authn.agent.read-only-port
  Scenario: The read-only server neither authenticates nor authorizes
    When the agent runs with "--anonymous-auth=false"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"
    And the read-only server answers GET "/pods" with 200

  @rule:authn.agent.serving-certificate
  Scenario: Without certificate files the HTTPS server uses a pair it saves under --cert-dir
    When the agent runs with "--cert-dir={dir}/pki"
    Then the HTTPS server presents a certificate stored under "{dir}/pki"

  @rule:authn.agent.serving-certificate @rule:orchlet.option.cert-dir.ignored-with-files
  Scenario: With --tls-cert-file and --tls-private-key-file the HTTPS server uses them and --cert-dir is ignored
    Given a certificate authority "ca"
    And a serving certificate "serving" signed by "ca"
    When the agent runs with "--tls-cert-file={certs}/serving.crt --tls-private-key-file={certs}/serving.key --cert-dir={dir}/pki"
    Then the HTTPS server presents the certificate "serving"
    And "{dir}/pki" holds no certificate

  @rule:orchlet.option.healthz-port.zero-disables
  Scenario: --healthz-port 0 disables the health server
    When the agent runs with "--healthz-port=0"
    Then nothing listens on the health port
    And the read-only server answers GET "/healthz" with 200 "ok"

  @rule:orchlet.option.read-only-port.zero-disables
  Scenario: --read-only-port 0 disables the read-only server
    When the agent runs with "--read-only-port=0"
    Then nothing listens on the read-only port
    And the HTTPS server answers GET "/healthz" with 200 "ok"

  @rule:orchlet.option.enable-server.disabled
  Scenario: --enable-server=false serves no HTTPS server
    When the agent runs with "--enable-server=false"
    Then nothing listens on the HTTPS port
    And the read-only server answers GET "/healthz" with 200 "ok"

  @rule:orchlet.option.enable-debugging-handlers.served
  Scenario: --enable-debugging-handlers serves the exec and log endpoints
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --enable-debugging-handlers=true"
    Then the agent reports pod "web" Running
    And the HTTPS server answers POST "/run/default/web-node-conformance/app?cmd=echo%20hello" with 200 "hello"
    And an exec of "echo hello" in container "app" of pod "web-node-conformance" over SPDY exits with code 0
    And the HTTPS server answers GET "/containerLogs/default/web-node-conformance/app" with anything but 405

  @rule:orchlet.option.enable-debugging-handlers.served
  Scenario: Without --enable-debugging-handlers the exec and log endpoints are refused
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --enable-debugging-handlers=false"
    Then the agent reports pod "web" Running
    And the HTTPS server answers POST "/run/default/web-node-conformance/app?cmd=echo%20hello" with 405
    And the HTTPS server answers POST "/exec/default/web-node-conformance/app?command=echo&output=1" with 405
    And the HTTPS server answers POST "/attach/default/web-node-conformance/app?output=1" with 405
    And the HTTPS server answers POST "/portForward/default/web-node-conformance" with 405
    And the HTTPS server answers GET "/containerLogs/default/web-node-conformance/app" with 405

  @rule:orch.orchlet.server.streams
  Scenario: exec and port-forward stream through the runtime's streaming server
    Given the runtime's script:
      """
      ports:
      - {port: 7, echo: true}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And an exec of "seq 1 200000" in container "app" of pod "web-node-conformance" over SPDY writes the numbers in order
    And an exec of "seq 1 200000" in container "app" of pod "web-node-conformance" over WebSocket writes the numbers in order
    And an exec of "sh -c 'exit 3'" in container "app" of pod "web-node-conformance" over SPDY exits with code 3
    And an exec of "false" in container "app" of pod "web-node-conformance" over WebSocket exits with code 1
    And a port-forward to port 7 of pod "web-node-conformance" echoes 16 MiB unchanged

  @rule:orchlet.option.contention-profiling.blocks
  Scenario: --contention-profiling turns on block profiling, served under /debug/pprof/
    When the agent runs with "--contention-profiling"
    Then the HTTPS server answers GET "/debug/pprof/block" with 200
    And the agent's block profile records where it blocked within 10s

  @rule:orchlet.option.contention-profiling.blocks
  Scenario: Without --contention-profiling the block profile stays empty
    When the agent runs with ""
    Then the agent's block profile records where it blocked after 2s: nowhere

  @rule:orchlet.option.streaming-connection-idle-timeout.applies
  Scenario: A connection idle longer than --streaming-connection-idle-timeout is closed
    When the agent runs with "--streaming-connection-idle-timeout=1s"
    Then a connection to the HTTPS server left idle for 2s is closed

  @rule:orchlet.option.streaming-connection-idle-timeout.applies
  Scenario: An exec stream idle longer than --streaming-connection-idle-timeout is closed
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --streaming-connection-idle-timeout=2s"
    Then the agent reports pod "web" Running
    And an exec of "cat" in container "app" of pod "web-node-conformance" left without input is closed within 10s

  @rule:orchlet.option.streaming-connection-idle-timeout.applies
  Scenario: Under the default idle timeout a connection idle as long stays open
    When the agent runs with ""
    Then a connection to the HTTPS server left idle for 2s is still open

  @rule:authn.agent.token-webhook @component:apiserver-start
  Scenario: With --authentication-token-webhook the API server says who a bearer token is
    Given a token file with the users "reader"
    And the API server is started with "--token-auth-file={dir}/tokens.csv --authorization-mode=AlwaysAllow --anonymous-auth=false"
    When the agent runs in API-server mode against the scenario's API server with "--anonymous-auth=false --authentication-token-webhook --authorization-mode=AlwaysAllow"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"
    When requests carry the bearer token of "reader"
    Then the HTTPS server answers GET "/pods" with 200
    When requests carry the bearer token "not-a-token-the-server-knows"
    Then the HTTPS server answers GET "/pods" with 401 "Unauthorized"

  @rule:authn.agent.authorization-mode @component:apiserver-start
  Scenario Outline: Under --authorization-mode <mode> a user the API server denies <outcome>
    Given a token file with the users "reader", "mallory"
    And a valid AuthorizationConfiguration file
    And its webhook is a SubjectAccessReview server answering "denied"
    And its "authorizers[0].webhook.matchConditions" is set to [{"expression": "request.user == 'mallory'"}]
    And its "authorizers[1]" is set to {"type": "AlwaysAllow", "name": "alwaysallow"}
    And the API server is started with "--token-auth-file={dir}/tokens.csv --authorization-config={config} --anonymous-auth=false"
    When the agent runs in API-server mode against the scenario's API server with "--anonymous-auth=false --authentication-token-webhook --authorization-mode=<mode>"
    And requests carry the bearer token of "reader"
    Then the HTTPS server answers GET "/pods" with 200
    When requests carry the bearer token of "mallory"
    Then the HTTPS server answers GET "/pods" with <code>

    Examples:
      | mode        | outcome              | code |
      | Webhook     | is forbidden         | 403  |
      | AlwaysAllow | is allowed all same  | 200  |

  @rule:authn.agent.authorization-mode @component:apiserver-start
  Scenario Outline: The agent keeps the API server's denial for <ttl>
    Given a token file with the users "mallory"
    And a valid AuthorizationConfiguration file
    And its webhook is a SubjectAccessReview server answering "denied"
    And its "authorizers[0].webhook.matchConditions" is set to [{"expression": "request.user == 'mallory'"}]
    And its "authorizers[0].webhook.unauthorizedTTL" is set to "1s"
    And its "authorizers[1]" is set to {"type": "AlwaysAllow", "name": "alwaysallow"}
    And the API server is started with "--token-auth-file={dir}/tokens.csv --authorization-config={config} --anonymous-auth=false"
    When the agent runs in API-server mode against the scenario's API server with "--anonymous-auth=false --authentication-token-webhook --authorization-mode=Webhook <flag>"
    And requests carry the bearer token of "mallory"
    Then the HTTPS server answers GET "/metrics" with 403
    When 3 seconds pass
    Then the HTTPS server answers GET "/metrics" with 403
    And the webhook was asked about nodes <asked> times

    Examples:
      | ttl            | flag                                              | asked |
      | 30s by default |                                                   | 1     |
      | 1s when told   | --authorization-webhook-cache-unauthorized-ttl=1s | 2     |
