@component:agent @component:runtime
Feature: Node agent image credential provider plugins
  The node agent asks the credential provider plugins of --image-credential-provider-config (a
  file, or a directory of files merged in lexicographic order, not recursively) for the
  credentials of an image whose repository their matchImages match, running each from
  --image-credential-provider-bin-dir with Kubernetes' request on stdin, and pulls with what it
  answers. The plugin here is orch's own, answering from a file of registry credentials.

  Background:
    Given a container runtime
    And the runtime's script:
      """
      images:
      - {match: "registry.example.com/*", auth: {username: puller, password: s3cret}}
      """
    And the manifest "private.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: private}
      spec:
        containers:
        - {name: app, image: "registry.example.com/team/app:1"}
      """
    And the file "registry-credentials.yaml":
      """
      registry.example.com: {username: puller, password: s3cret}
      """
    And the credential provider plugin "orch-credential-provider" in the directory "plugins"

  @rule:orchlet.option.image-credential-provider-config.plugin @rule:orchlet.option.image-credential-provider-config.merge
  Scenario: A plugin from a configuration directory gives the credentials a private registry wants
    Given the file "credential-providers/10-private.yaml":
      """
      apiVersion: orchlet.config.orch.io/v1
      kind: CredentialProviderConfig
      providers:
      - name: orch-credential-provider
        matchImages: ["registry.example.com"]
        defaultCacheDuration: 5m
        apiVersion: credentialprovider.kubelet.k8s.io/v1
        args: ["--credentials={dir}/registry-credentials.yaml"]
      """
    And the file "credential-providers/notes.txt":
      """
      not a configuration file: not read
      """
    And the file "credential-providers/nested/00-broken.yaml":
      """
      in a subdirectory: [not read
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --image-credential-provider-config={dir}/credential-providers --image-credential-provider-bin-dir={dir}/plugins"
    Then the agent reports pod "private" Running

  @rule:orchlet.option.image-credential-provider-config.plugin
  Scenario: A plugin whose matchImages do not match the image is not asked, and the pull is refused
    Given the file "credential-providers.yaml":
      """
      apiVersion: orchlet.config.orch.io/v1
      kind: CredentialProviderConfig
      providers:
      - name: orch-credential-provider
        matchImages: ["other.example.com"]
        defaultCacheDuration: 5m
        apiVersion: credentialprovider.kubelet.k8s.io/v1
        args: ["--credentials={dir}/registry-credentials.yaml"]
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --image-credential-provider-config={dir}/credential-providers.yaml --image-credential-provider-bin-dir={dir}/plugins"
    Then the runtime received PullImage calls
    And the runtime runs no container of pod "private"

  @rule:orchlet.option.image-credential-provider-config.token-attributes
  Scenario: A provider's tokenAttributes (service account token mode) are checked as the kubelet checks them
    Given the file "token-mode.yaml":
      """
      apiVersion: orchlet.config.orch.io/v1
      kind: CredentialProviderConfig
      providers:
      - name: orch-credential-provider
        matchImages: ["registry.example.com"]
        defaultCacheDuration: 5m
        apiVersion: credentialprovider.kubelet.k8s.io/v1
        tokenAttributes: {serviceAccountTokenAudience: registry.example.com, requireServiceAccount: true}
      """
    Then the agent run with "--pod-manifest-path={manifests} --image-credential-provider-config={dir}/token-mode.yaml --image-credential-provider-bin-dir={dir}/plugins" exits naming the field "providers[0].tokenAttributes.cacheType", with or without its list indexes, as "Required value"
