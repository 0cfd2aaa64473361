@component:agent
Feature: Node agent options
  The node agent's command line offers every option of SPEC.md with its type, its default and its
  deprecation, and refuses at start-up the values an option's meaning rules out, naming the option.

  @rule:orchlet.option.help
  Scenario: --help prints the help and exits
    When the agent is run with "--help"
    Then it exits successfully
    And its output lists the option "--config"

  Scenario Outline: <option> is declared with its type, default and deprecation
    When the agent's help is read
    Then the help lists the option "<option>" of type "<type>"
    And the help shows "<option>" with default "<default>"
    And the help marks "<option>" as deprecated for "<deprecation>"

    @rule:orchlet.option.address @rule:versioning.deprecations.config-file
    Examples: --address
      | option | type | default | deprecation |
      | --address | string | 0.0.0.0 | config file |

    @rule:orchlet.option.allowed-unsafe-sysctls @rule:versioning.deprecations.config-file
    Examples: --allowed-unsafe-sysctls
      | option | type | default | deprecation |
      | --allowed-unsafe-sysctls | strings |  | config file |

    @rule:orchlet.option.anonymous-auth @rule:versioning.deprecations.config-file
    Examples: --anonymous-auth
      | option | type | default | deprecation |
      | --anonymous-auth | bool | true | config file |

    @rule:orchlet.option.authentication-token-webhook @rule:versioning.deprecations.config-file
    Examples: --authentication-token-webhook
      | option | type | default | deprecation |
      | --authentication-token-webhook | bool |  | config file |

    @rule:orchlet.option.authentication-token-webhook-cache-ttl @rule:versioning.deprecations.config-file
    Examples: --authentication-token-webhook-cache-ttl
      | option | type | default | deprecation |
      | --authentication-token-webhook-cache-ttl | duration | 2m0s | config file |

    @rule:orchlet.option.authorization-mode @rule:versioning.deprecations.config-file
    Examples: --authorization-mode
      | option | type | default | deprecation |
      | --authorization-mode | string | AlwaysAllow | config file |

    @rule:orchlet.option.authorization-webhook-cache-authorized-ttl @rule:versioning.deprecations.config-file
    Examples: --authorization-webhook-cache-authorized-ttl
      | option | type | default | deprecation |
      | --authorization-webhook-cache-authorized-ttl | duration | 5m0s | config file |

    @rule:orchlet.option.authorization-webhook-cache-unauthorized-ttl @rule:versioning.deprecations.config-file
    Examples: --authorization-webhook-cache-unauthorized-ttl
      | option | type | default | deprecation |
      | --authorization-webhook-cache-unauthorized-ttl | duration | 30s | config file |

    @rule:orchlet.option.bootstrap-kubeconfig
    Examples: --bootstrap-kubeconfig
      | option | type | default | deprecation |
      | --bootstrap-kubeconfig | string |  | none |

    @rule:orchlet.option.cert-dir
    Examples: --cert-dir
      | option | type | default | deprecation |
      | --cert-dir | string | /var/lib/orchlet/pki | none |

    @rule:orchlet.option.cgroup-driver @rule:versioning.deprecations.config-file
    Examples: --cgroup-driver
      | option | type | default | deprecation |
      | --cgroup-driver | string | cgroupfs | config file |

    @rule:orchlet.option.cgroup-root @rule:versioning.deprecations.config-file
    Examples: --cgroup-root
      | option | type | default | deprecation |
      | --cgroup-root | string | '' | config file |

    @rule:orchlet.option.cgroups-per-qos @rule:versioning.deprecations.config-file
    Examples: --cgroups-per-qos
      | option | type | default | deprecation |
      | --cgroups-per-qos | bool | true | config file |

    @rule:orchlet.option.client-ca-file @rule:versioning.deprecations.config-file
    Examples: --client-ca-file
      | option | type | default | deprecation |
      | --client-ca-file | string |  | config file |

    @rule:orchlet.option.cloud-provider
    Examples: --cloud-provider
      | option | type | default | deprecation |
      | --cloud-provider | string |  | none |

    @rule:orchlet.option.cluster-dns @rule:versioning.deprecations.config-file
    Examples: --cluster-dns
      | option | type | default | deprecation |
      | --cluster-dns | strings |  | config file |

    @rule:orchlet.option.cluster-domain @rule:versioning.deprecations.config-file
    Examples: --cluster-domain
      | option | type | default | deprecation |
      | --cluster-domain | string |  | config file |

    @rule:orchlet.option.config
    Examples: --config
      | option | type | default | deprecation |
      | --config | string |  | none |

    @rule:orchlet.option.config-dir
    Examples: --config-dir
      | option | type | default | deprecation |
      | --config-dir | string | '' | none |

    @rule:orchlet.option.container-log-max-files @rule:limits.agent.container-logs @rule:versioning.deprecations.config-file
    Examples: --container-log-max-files
      | option | type | default | deprecation |
      | --container-log-max-files | int32 | 5 | config file |

    @rule:orchlet.option.container-log-max-size @rule:limits.agent.container-logs @rule:versioning.deprecations.config-file
    Examples: --container-log-max-size
      | option | type | default | deprecation |
      | --container-log-max-size | string | 10Mi | config file |

    @rule:orchlet.option.container-runtime-endpoint @rule:versioning.deprecations.config-file
    Examples: --container-runtime-endpoint
      | option | type | default | deprecation |
      | --container-runtime-endpoint | string | unix:///run/<runtime>/<runtime>.sock | config file |

    @rule:orchlet.option.contention-profiling @rule:versioning.deprecations.config-file
    Examples: --contention-profiling
      | option | type | default | deprecation |
      | --contention-profiling | bool |  | config file |

    @rule:orchlet.option.cpu-cfs-quota @rule:versioning.deprecations.config-file
    Examples: --cpu-cfs-quota
      | option | type | default | deprecation |
      | --cpu-cfs-quota | bool | true | config file |

    @rule:orchlet.option.cpu-cfs-quota-period @rule:versioning.deprecations.config-file
    Examples: --cpu-cfs-quota-period
      | option | type | default | deprecation |
      | --cpu-cfs-quota-period | duration | 100ms | config file |

    @rule:orchlet.option.cpu-manager-policy @rule:versioning.deprecations.config-file
    Examples: --cpu-manager-policy
      | option | type | default | deprecation |
      | --cpu-manager-policy | string | none | config file |

    @rule:orchlet.option.cpu-manager-policy-options @rule:versioning.deprecations.config-file
    Examples: --cpu-manager-policy-options
      | option | type | default | deprecation |
      | --cpu-manager-policy-options | key=value pairs |  | config file |

    @rule:orchlet.option.cpu-manager-reconcile-period @rule:versioning.deprecations.config-file
    Examples: --cpu-manager-reconcile-period
      | option | type | default | deprecation |
      | --cpu-manager-reconcile-period | duration | 10s | config file |

    @rule:orchlet.option.enable-controller-attach-detach @rule:versioning.deprecations.config-file
    Examples: --enable-controller-attach-detach
      | option | type | default | deprecation |
      | --enable-controller-attach-detach | bool | true | config file |

    @rule:orchlet.option.enable-debugging-handlers @rule:versioning.deprecations.config-file
    Examples: --enable-debugging-handlers
      | option | type | default | deprecation |
      | --enable-debugging-handlers | bool | true | config file |

    @rule:orchlet.option.enable-server @rule:versioning.deprecations.config-file
    Examples: --enable-server
      | option | type | default | deprecation |
      | --enable-server | bool | true | config file |

    @rule:orchlet.option.enforce-node-allocatable @rule:versioning.deprecations.config-file
    Examples: --enforce-node-allocatable
      | option | type | default | deprecation |
      | --enforce-node-allocatable | strings | pods | config file |

    @rule:orchlet.option.event-burst @rule:limits.agent.event-rate @rule:versioning.deprecations.config-file
    Examples: --event-burst
      | option | type | default | deprecation |
      | --event-burst | int32 | 100 | config file |

    @rule:orchlet.option.event-qps @rule:limits.agent.event-rate @rule:versioning.deprecations.config-file
    Examples: --event-qps
      | option | type | default | deprecation |
      | --event-qps | int32 | 50 | config file |

    @rule:orchlet.option.eviction-hard @rule:versioning.deprecations.config-file
    Examples: --eviction-hard
      | option | type | default | deprecation |
      | --eviction-hard | key=value pairs |  | config file |

    @rule:orchlet.option.eviction-max-pod-grace-period @rule:versioning.deprecations.config-file
    Examples: --eviction-max-pod-grace-period
      | option | type | default | deprecation |
      | --eviction-max-pod-grace-period | int32 |  | config file |

    @rule:orchlet.option.eviction-minimum-reclaim @rule:versioning.deprecations.config-file
    Examples: --eviction-minimum-reclaim
      | option | type | default | deprecation |
      | --eviction-minimum-reclaim | key=value pairs |  | config file |

    @rule:orchlet.option.eviction-pressure-transition-period @rule:limits.agent.eviction-pressure-transition-period @rule:versioning.deprecations.config-file
    Examples: --eviction-pressure-transition-period
      | option | type | default | deprecation |
      | --eviction-pressure-transition-period | duration | 5m0s | config file |

    @rule:orchlet.option.eviction-soft @rule:versioning.deprecations.config-file
    Examples: --eviction-soft
      | option | type | default | deprecation |
      | --eviction-soft | key=value pairs |  | config file |

    @rule:orchlet.option.eviction-soft-grace-period @rule:versioning.deprecations.config-file
    Examples: --eviction-soft-grace-period
      | option | type | default | deprecation |
      | --eviction-soft-grace-period | key=value pairs |  | config file |

    @rule:orchlet.option.exit-on-lock-contention
    Examples: --exit-on-lock-contention
      | option | type | default | deprecation |
      | --exit-on-lock-contention | bool |  | none |

    @rule:orchlet.option.experimental-allocatable-ignore-eviction @rule:versioning.deprecations.removals
    Examples: --experimental-allocatable-ignore-eviction
      | option | type | default | deprecation |
      | --experimental-allocatable-ignore-eviction | bool | false | removal in 1.25 |

    @rule:orchlet.option.experimental-mounter-path @rule:versioning.deprecations.removals
    Examples: --experimental-mounter-path
      | option | type | default | deprecation |
      | --experimental-mounter-path | string |  | removal in 1.25 |

    @rule:orchlet.option.fail-cgroupv1
    Examples: --fail-cgroupv1
      | option | type | default | deprecation |
      | --fail-cgroupv1 | bool |  | none |

    @rule:orchlet.option.fail-swap-on @rule:versioning.deprecations.config-file
    Examples: --fail-swap-on
      | option | type | default | deprecation |
      | --fail-swap-on | bool | true | config file |

    @rule:orchlet.option.feature-gates @rule:versioning.deprecations.config-file
    Examples: --feature-gates
      | option | type | default | deprecation |
      | --feature-gates | key=True\|False pairs |  | config file |

    @rule:orchlet.option.file-check-frequency @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --file-check-frequency
      | option | type | default | deprecation |
      | --file-check-frequency | duration | 20s | config file |

    @rule:orchlet.option.hairpin-mode @rule:versioning.deprecations.config-file
    Examples: --hairpin-mode
      | option | type | default | deprecation |
      | --hairpin-mode | string | promiscuous-bridge | config file |

    @rule:orchlet.option.healthz-bind-address @rule:versioning.deprecations.config-file
    Examples: --healthz-bind-address
      | option | type | default | deprecation |
      | --healthz-bind-address | string | 127.0.0.1 | config file |

    @rule:orchlet.option.healthz-port @rule:versioning.deprecations.config-file
    Examples: --healthz-port
      | option | type | default | deprecation |
      | --healthz-port | int32 | 10248 | config file |

    @rule:orchlet.option.hostname-override
    Examples: --hostname-override
      | option | type | default | deprecation |
      | --hostname-override | string |  | none |

    @rule:orchlet.option.http-check-frequency @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --http-check-frequency
      | option | type | default | deprecation |
      | --http-check-frequency | duration | 20s | config file |

    @rule:orchlet.option.image-credential-provider-bin-dir
    Examples: --image-credential-provider-bin-dir
      | option | type | default | deprecation |
      | --image-credential-provider-bin-dir | string |  | none |

    @rule:orchlet.option.image-credential-provider-config
    Examples: --image-credential-provider-config
      | option | type | default | deprecation |
      | --image-credential-provider-config | string |  | none |

    @rule:orchlet.option.image-gc-high-threshold @rule:limits.agent.image-gc-thresholds @rule:versioning.deprecations.config-file
    Examples: --image-gc-high-threshold
      | option | type | default | deprecation |
      | --image-gc-high-threshold | int32 | 85 | config file |

    @rule:orchlet.option.image-gc-low-threshold @rule:limits.agent.image-gc-thresholds @rule:versioning.deprecations.config-file
    Examples: --image-gc-low-threshold
      | option | type | default | deprecation |
      | --image-gc-low-threshold | int32 | 80 | config file |

    @rule:orchlet.option.image-service-endpoint @rule:versioning.deprecations.config-file
    Examples: --image-service-endpoint
      | option | type | default | deprecation |
      | --image-service-endpoint | string |  | config file |

    @rule:orchlet.option.kernel-memcg-notification @rule:versioning.deprecations.config-file
    Examples: --kernel-memcg-notification
      | option | type | default | deprecation |
      | --kernel-memcg-notification | bool |  | config file |

    @rule:orchlet.option.kube-api-burst @rule:limits.agent.api-rate @rule:versioning.deprecations.config-file
    Examples: --kube-api-burst
      | option | type | default | deprecation |
      | --kube-api-burst | int32 | 100 | config file |

    @rule:orchlet.option.kube-api-content-type @rule:versioning.deprecations.config-file
    Examples: --kube-api-content-type
      | option | type | default | deprecation |
      | --kube-api-content-type | string | application/vnd.orch.protobuf | config file |

    @rule:orchlet.option.kube-api-qps @rule:limits.agent.api-rate @rule:versioning.deprecations.config-file
    Examples: --kube-api-qps
      | option | type | default | deprecation |
      | --kube-api-qps | int32 | 50 | config file |

    @rule:orchlet.option.kube-reserved @rule:versioning.deprecations.config-file
    Examples: --kube-reserved
      | option | type | default | deprecation |
      | --kube-reserved | key=value pairs | none | config file |

    @rule:orchlet.option.kube-reserved-cgroup @rule:versioning.deprecations.config-file
    Examples: --kube-reserved-cgroup
      | option | type | default | deprecation |
      | --kube-reserved-cgroup | string | '' | config file |

    @rule:orchlet.option.orchconfig
    Examples: --orchconfig
      | option | type | default | deprecation |
      | --orchconfig | string |  | none |

    @rule:orchlet.option.kubelet-cgroups @rule:versioning.deprecations.config-file
    Examples: --kubelet-cgroups
      | option | type | default | deprecation |
      | --kubelet-cgroups | string |  | config file |

    @rule:orchlet.option.local-storage-capacity-isolation @rule:versioning.deprecations.config-file
    Examples: --local-storage-capacity-isolation
      | option | type | default | deprecation |
      | --local-storage-capacity-isolation | bool | true | config file |

    @rule:orchlet.option.lock-file
    Examples: --lock-file
      | option | type | default | deprecation |
      | --lock-file | string |  | none |

    @rule:orchlet.option.log-flush-frequency
    Examples: --log-flush-frequency
      | option | type | default | deprecation |
      | --log-flush-frequency | duration | 5s | none |

    @rule:orchlet.option.log-text-info-buffer-size @rule:versioning.deprecations.config-file
    Examples: --log-text-info-buffer-size
      | option | type | default | deprecation |
      | --log-text-info-buffer-size | quantity | 0 | config file |

    @rule:orchlet.option.log-text-split-stream @rule:versioning.deprecations.config-file
    Examples: --log-text-split-stream
      | option | type | default | deprecation |
      | --log-text-split-stream | bool |  | config file |

    @rule:orchlet.option.logging-format @rule:versioning.deprecations.config-file
    Examples: --logging-format
      | option | type | default | deprecation |
      | --logging-format | string | text | config file |

    @rule:orchlet.option.make-iptables-util-chains @rule:versioning.deprecations.config-file
    Examples: --make-iptables-util-chains
      | option | type | default | deprecation |
      | --make-iptables-util-chains | bool | true | config file |

    @rule:orchlet.option.manifest-url @rule:versioning.deprecations.config-file
    Examples: --manifest-url
      | option | type | default | deprecation |
      | --manifest-url | string |  | config file |

    @rule:orchlet.option.manifest-url-header @rule:versioning.deprecations.config-file
    Examples: --manifest-url-header
      | option | type | default | deprecation |
      | --manifest-url-header | colon-separated multimap |  | config file |

    @rule:orchlet.option.max-open-files @rule:limits.agent.max-open-files @rule:versioning.deprecations.config-file
    Examples: --max-open-files
      | option | type | default | deprecation |
      | --max-open-files | int | 1000000 | config file |

    @rule:orchlet.option.max-pods @rule:limits.agent.max-pods @rule:versioning.deprecations.config-file
    Examples: --max-pods
      | option | type | default | deprecation |
      | --max-pods | int32 | 110 | config file |

    @rule:orchlet.option.maximum-dead-containers @rule:limits.agent.maximum-dead-containers @rule:versioning.deprecations.removals
    Examples: --maximum-dead-containers
      | option | type | default | deprecation |
      | --maximum-dead-containers | int32 | -1 | eviction options |

    @rule:orchlet.option.maximum-dead-containers-per-container @rule:limits.agent.maximum-dead-containers-per-container @rule:versioning.deprecations.removals
    Examples: --maximum-dead-containers-per-container
      | option | type | default | deprecation |
      | --maximum-dead-containers-per-container | int32 | 1 | eviction options |

    @rule:orchlet.option.memory-manager-policy @rule:versioning.deprecations.config-file
    Examples: --memory-manager-policy
      | option | type | default | deprecation |
      | --memory-manager-policy | string | None | config file |

    @rule:orchlet.option.minimum-container-ttl-duration @rule:versioning.deprecations.removals
    Examples: --minimum-container-ttl-duration
      | option | type | default | deprecation |
      | --minimum-container-ttl-duration | duration |  | eviction options |

    @rule:orchlet.option.minimum-image-ttl-duration @rule:limits.agent.minimum-image-ttl-duration @rule:versioning.deprecations.config-file
    Examples: --minimum-image-ttl-duration
      | option | type | default | deprecation |
      | --minimum-image-ttl-duration | duration | 2m0s | config file |

    @rule:orchlet.option.node-ip
    Examples: --node-ip
      | option | type | default | deprecation |
      | --node-ip | string |  | none |

    @rule:orchlet.option.node-labels
    Examples: --node-labels
      | option | type | default | deprecation |
      | --node-labels | key=value pairs |  | none |

    @rule:orchlet.option.node-status-max-images @rule:limits.agent.node-status-max-images @rule:versioning.deprecations.config-file
    Examples: --node-status-max-images
      | option | type | default | deprecation |
      | --node-status-max-images | int32 | 50 | config file |

    @rule:orchlet.option.node-status-update-frequency @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --node-status-update-frequency
      | option | type | default | deprecation |
      | --node-status-update-frequency | duration | 10s | config file |

    @rule:orchlet.option.oom-score-adj @rule:limits.agent.oom-score-adj @rule:versioning.deprecations.config-file
    Examples: --oom-score-adj
      | option | type | default | deprecation |
      | --oom-score-adj | int32 | -999 | config file |

    @rule:orchlet.option.pod-cidr @rule:versioning.deprecations.config-file
    Examples: --pod-cidr
      | option | type | default | deprecation |
      | --pod-cidr | string |  | config file |

    @rule:orchlet.option.pod-infra-container-image @rule:versioning.deprecations.removals
    Examples: --pod-infra-container-image
      | option | type | default | deprecation |
      | --pod-infra-container-image | string |  | removal in 1.35 |

    @rule:orchlet.option.pod-manifest-path @rule:versioning.deprecations.config-file
    Examples: --pod-manifest-path
      | option | type | default | deprecation |
      | --pod-manifest-path | string |  | config file |

    @rule:orchlet.option.pod-max-pids @rule:limits.agent.pod-max-pids @rule:versioning.deprecations.config-file
    Examples: --pod-max-pids
      | option | type | default | deprecation |
      | --pod-max-pids | int | -1 | config file |

    @rule:orchlet.option.pods-per-core @rule:versioning.deprecations.config-file
    Examples: --pods-per-core
      | option | type | default | deprecation |
      | --pods-per-core | int32 |  | config file |

    @rule:orchlet.option.port @rule:versioning.deprecations.config-file
    Examples: --port
      | option | type | default | deprecation |
      | --port | int32 | 10250 | config file |

    @rule:orchlet.option.protect-kernel-defaults @rule:versioning.deprecations.config-file
    Examples: --protect-kernel-defaults
      | option | type | default | deprecation |
      | --protect-kernel-defaults | bool |  | config file |

    @rule:orchlet.option.provider-id
    Examples: --provider-id
      | option | type | default | deprecation |
      | --provider-id | string |  | none |

    @rule:orchlet.option.qos-reserved @rule:versioning.deprecations.config-file
    Examples: --qos-reserved
      | option | type | default | deprecation |
      | --qos-reserved | key=value pairs |  | config file |

    @rule:orchlet.option.read-only-port @rule:versioning.deprecations.config-file
    Examples: --read-only-port
      | option | type | default | deprecation |
      | --read-only-port | int32 | 10255 | config file |

    @rule:orchlet.option.register-node @rule:versioning.deprecations.config-file
    Examples: --register-node
      | option | type | default | deprecation |
      | --register-node | bool | true | config file |

    @rule:orchlet.option.register-with-taints @rule:versioning.deprecations.config-file
    Examples: --register-with-taints
      | option | type | default | deprecation |
      | --register-with-taints | []Taint |  | config file |

    @rule:orchlet.option.registry-burst @rule:limits.agent.registry-rate @rule:versioning.deprecations.config-file
    Examples: --registry-burst
      | option | type | default | deprecation |
      | --registry-burst | int32 | 10 | config file |

    @rule:orchlet.option.registry-qps @rule:limits.agent.registry-rate @rule:versioning.deprecations.config-file
    Examples: --registry-qps
      | option | type | default | deprecation |
      | --registry-qps | int32 | 5 | config file |

    @rule:orchlet.option.reserved-cpus @rule:versioning.deprecations.config-file
    Examples: --reserved-cpus
      | option | type | default | deprecation |
      | --reserved-cpus | string |  | config file |

    @rule:orchlet.option.reserved-memory @rule:versioning.deprecations.config-file
    Examples: --reserved-memory
      | option | type | default | deprecation |
      | --reserved-memory | reserved-memory |  | config file |

    @rule:orchlet.option.resolv-conf @rule:versioning.deprecations.config-file
    Examples: --resolv-conf
      | option | type | default | deprecation |
      | --resolv-conf | string | /etc/resolv.conf | config file |

    @rule:orchlet.option.root-dir
    Examples: --root-dir
      | option | type | default | deprecation |
      | --root-dir | string | /var/lib/orchlet | none |

    @rule:orchlet.option.rotate-certificates @rule:versioning.deprecations.config-file
    Examples: --rotate-certificates
      | option | type | default | deprecation |
      | --rotate-certificates | bool |  | config file |

    @rule:orchlet.option.rotate-server-certificates @rule:versioning.deprecations.config-file
    Examples: --rotate-server-certificates
      | option | type | default | deprecation |
      | --rotate-server-certificates | bool |  | config file |

    @rule:orchlet.option.runonce @rule:versioning.deprecations.config-file
    Examples: --runonce
      | option | type | default | deprecation |
      | --runonce | bool |  | config file |

    @rule:orchlet.option.runtime-cgroups
    Examples: --runtime-cgroups
      | option | type | default | deprecation |
      | --runtime-cgroups | string |  | none |

    @rule:orchlet.option.runtime-request-timeout @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --runtime-request-timeout
      | option | type | default | deprecation |
      | --runtime-request-timeout | duration | 2m0s | config file |

    @rule:orchlet.option.seccomp-default
    Examples: --seccomp-default
      | option | type | default | deprecation |
      | --seccomp-default | RuntimeDefault |  | none |

    @rule:orchlet.option.serialize-image-pulls @rule:versioning.deprecations.config-file
    Examples: --serialize-image-pulls
      | option | type | default | deprecation |
      | --serialize-image-pulls | bool | true | config file |

    @rule:orchlet.option.streaming-connection-idle-timeout @rule:versioning.deprecations.config-file
    Examples: --streaming-connection-idle-timeout
      | option | type | default | deprecation |
      | --streaming-connection-idle-timeout | duration | 4h0m0s | config file |

    @rule:orchlet.option.sync-frequency @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --sync-frequency
      | option | type | default | deprecation |
      | --sync-frequency | duration | 1m0s | config file |

    @rule:orchlet.option.system-cgroups @rule:versioning.deprecations.config-file
    Examples: --system-cgroups
      | option | type | default | deprecation |
      | --system-cgroups | string |  | config file |

    @rule:orchlet.option.system-reserved @rule:versioning.deprecations.config-file
    Examples: --system-reserved
      | option | type | default | deprecation |
      | --system-reserved | key=value pairs | none | config file |

    @rule:orchlet.option.system-reserved-cgroup @rule:versioning.deprecations.config-file
    Examples: --system-reserved-cgroup
      | option | type | default | deprecation |
      | --system-reserved-cgroup | string | '' | config file |

    @rule:orchlet.option.tls-cert-file @rule:versioning.deprecations.config-file
    Examples: --tls-cert-file
      | option | type | default | deprecation |
      | --tls-cert-file | string |  | config file |

    @rule:orchlet.option.tls-cipher-suites @rule:versioning.deprecations.config-file
    Examples: --tls-cipher-suites
      | option | type | default | deprecation |
      | --tls-cipher-suites | strings |  | config file |

    @rule:orchlet.option.tls-min-version @rule:versioning.deprecations.config-file
    Examples: --tls-min-version
      | option | type | default | deprecation |
      | --tls-min-version | string |  | config file |

    @rule:orchlet.option.tls-private-key-file @rule:versioning.deprecations.config-file
    Examples: --tls-private-key-file
      | option | type | default | deprecation |
      | --tls-private-key-file | string |  | config file |

    @rule:orchlet.option.topology-manager-policy @rule:versioning.deprecations.config-file
    Examples: --topology-manager-policy
      | option | type | default | deprecation |
      | --topology-manager-policy | string | none | config file |

    @rule:orchlet.option.topology-manager-policy-options @rule:versioning.deprecations.config-file
    Examples: --topology-manager-policy-options
      | option | type | default | deprecation |
      | --topology-manager-policy-options | key=value pairs |  | config file |

    @rule:orchlet.option.topology-manager-scope @rule:versioning.deprecations.config-file
    Examples: --topology-manager-scope
      | option | type | default | deprecation |
      | --topology-manager-scope | string | container | config file |

    @rule:orchlet.option.v
    Examples: --v
      | option | type | default | deprecation |
      | --v | int |  | none |

    @rule:orchlet.option.version
    Examples: --version
      | option | type | default | deprecation |
      | --version | version[=true] |  | none |

    @rule:orchlet.option.vmodule
    Examples: --vmodule
      | option | type | default | deprecation |
      | --vmodule | pattern=N,... |  | none |

    @rule:orchlet.option.volume-plugin-dir @rule:versioning.deprecations.config-file
    Examples: --volume-plugin-dir
      | option | type | default | deprecation |
      | --volume-plugin-dir | string | /usr/libexec/orch/orchlet-plugins/volume/exec/ | config file |

    @rule:orchlet.option.volume-stats-agg-period @rule:limits.agent.polling-periods @rule:versioning.deprecations.config-file
    Examples: --volume-stats-agg-period
      | option | type | default | deprecation |
      | --volume-stats-agg-period | duration | 1m0s | config file |

  Scenario Outline: the agent refuses <arguments>
    When the agent starts with "<arguments>"
    Then it refuses to start naming "<option>"

    @rule:orchlet.option.address.ip
    Examples: orchlet.option.address.ip
      | arguments | option |
      | --address=not-an-ip | --address |

    @rule:orchlet.option.authorization-mode.allowed
    Examples: orchlet.option.authorization-mode.allowed
      | arguments | option |
      | --authorization-mode=AlwaysDeny | --authorization-mode |

    @rule:orchlet.option.cgroup-driver.allowed
    Examples: orchlet.option.cgroup-driver.allowed
      | arguments | option |
      | --cgroup-driver=bogus | --cgroup-driver |

    @rule:orchlet.option.cluster-dns.ips
    Examples: orchlet.option.cluster-dns.ips
      | arguments | option |
      | --cluster-dns=10.0.0.10,dns.example | --cluster-dns |

    @rule:orchlet.option.container-log-max-files.at-least-2
    Examples: orchlet.option.container-log-max-files.at-least-2
      | arguments | option |
      | --container-log-max-files=1 | --container-log-max-files |

    @rule:orchlet.option.container-log-max-size.quantity
    Examples: orchlet.option.container-log-max-size.quantity
      | arguments | option |
      | --container-log-max-size=ten | --container-log-max-size |

    @rule:orchlet.option.cpu-manager-policy.allowed
    Examples: orchlet.option.cpu-manager-policy.allowed
      | arguments | option |
      | --cpu-manager-policy=dynamic | --cpu-manager-policy |

    @rule:orchlet.option.cpu-manager-policy-options.gates
    Examples: orchlet.option.cpu-manager-policy-options.gates
      | arguments | option |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=pack-cpus=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=align-by-socket=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyBetaOptions=false --cpu-manager-policy-options=distribute-cpus-across-numa=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=full-pcpus-only=yes-please | --cpu-manager-policy-options |
      | --cpu-manager-policy-options=full-pcpus-only=true | --cpu-manager-policy-options |

    @rule:orchlet.option.cpu-manager-policy-options.exclusive
    Examples: orchlet.option.cpu-manager-policy-options.exclusive
      | arguments | option |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyAlphaOptions=true --cpu-manager-policy-options=full-pcpus-only=true --cpu-manager-policy-options=distribute-cpus-across-cores=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyAlphaOptions=true --cpu-manager-policy-options=distribute-cpus-across-numa=true --cpu-manager-policy-options=distribute-cpus-across-cores=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyAlphaOptions=true --cpu-manager-policy-options=prefer-align-cpus-by-uncorecache=true --cpu-manager-policy-options=distribute-cpus-across-cores=true | --cpu-manager-policy-options |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=prefer-align-cpus-by-uncorecache=true --cpu-manager-policy-options=distribute-cpus-across-numa=true | --cpu-manager-policy-options |

    @rule:orchlet.option.enforce-node-allocatable.levels
    Examples: orchlet.option.enforce-node-allocatable.levels
      | arguments | option |
      | --enforce-node-allocatable=everything | --enforce-node-allocatable |

    @rule:orchlet.option.enforce-node-allocatable.reserved-cgroup
    Examples: orchlet.option.enforce-node-allocatable.reserved-cgroup
      | arguments | option |
      | --enforce-node-allocatable=pods,system-reserved | --enforce-node-allocatable |

    @rule:orchlet.option.enforce-node-allocatable.none-alone
    Examples: orchlet.option.enforce-node-allocatable.none-alone
      | arguments | option |
      | --enforce-node-allocatable=none,pods | --enforce-node-allocatable |

    @rule:orchlet.option.event-burst.non-negative
    Examples: orchlet.option.event-burst.non-negative
      | arguments | option |
      | --event-burst=-1 | --event-burst |

    @rule:orchlet.option.event-qps.non-negative
    Examples: orchlet.option.event-qps.non-negative
      | arguments | option |
      | --event-qps=-1 | --event-qps |

    @rule:orchlet.option.eviction-hard.thresholds
    Examples: orchlet.option.eviction-hard.thresholds
      | arguments | option |
      | --eviction-hard=memory.available>1Gi | --eviction-hard |

    @rule:orchlet.option.eviction-soft.grace-period
    Examples: orchlet.option.eviction-soft.grace-period
      | arguments | option |
      | --eviction-soft=memory.available<1Gi | --eviction-soft |

    @rule:orchlet.option.hairpin-mode.allowed
    Examples: orchlet.option.hairpin-mode.allowed
      | arguments | option |
      | --hairpin-mode=always | --hairpin-mode |

    @rule:orchlet.option.image-gc-high-threshold.range
    Examples: orchlet.option.image-gc-high-threshold.range
      | arguments | option |
      | --image-gc-high-threshold=101 | --image-gc-high-threshold |

    @rule:orchlet.option.image-gc-low-threshold.range
    Examples: orchlet.option.image-gc-low-threshold.range
      | arguments | option |
      | --image-gc-low-threshold=-1 | --image-gc-low-threshold |

    @rule:orchlet.option.image-gc-low-threshold.below-high
    Examples: orchlet.option.image-gc-low-threshold.below-high
      | arguments | option |
      | --image-gc-low-threshold=90 --image-gc-high-threshold=85 | --image-gc-low-threshold |

    @rule:orchlet.option.kube-api-burst.non-negative
    Examples: orchlet.option.kube-api-burst.non-negative
      | arguments | option |
      | --kube-api-burst=-1 | --kube-api-burst |

    @rule:orchlet.option.kube-api-qps.non-negative
    Examples: orchlet.option.kube-api-qps.non-negative
      | arguments | option |
      | --kube-api-qps=-1 | --kube-api-qps |

    @rule:orchlet.option.kube-reserved.resources
    Examples: orchlet.option.kube-reserved.resources
      | arguments | option |
      | --kube-reserved=gpu=1 | --kube-reserved |

    @rule:orchlet.option.system-reserved.resources
    Examples: orchlet.option.system-reserved.resources
      | arguments | option |
      | --system-reserved=gpu=1 | --system-reserved |

    @rule:orchlet.option.log-text-info-buffer-size.gate
    Examples: orchlet.option.log-text-info-buffer-size.gate
      | arguments | option |
      | --log-text-info-buffer-size=1Mi | --log-text-info-buffer-size |

    @rule:orchlet.option.log-text-split-stream.gate
    Examples: orchlet.option.log-text-split-stream.gate
      | arguments | option |
      | --log-text-split-stream | --log-text-split-stream |

    @rule:orchlet.option.logging-format.text-only
    Examples: orchlet.option.logging-format.text-only
      | arguments | option |
      | --logging-format=json | --logging-format |

    @rule:orchlet.option.manifest-url-header.form
    Examples: orchlet.option.manifest-url-header.form
      | arguments | option |
      | --manifest-url-header=no-colon | --manifest-url-header |

    @rule:orchlet.option.memory-manager-policy.allowed
    Examples: orchlet.option.memory-manager-policy.allowed
      | arguments | option |
      | --memory-manager-policy=Dynamic | --memory-manager-policy |

    @rule:orchlet.option.node-ip.ips
    Examples: orchlet.option.node-ip.ips
      | arguments | option |
      | --node-ip=node-1 | --node-ip |

    @rule:orchlet.option.node-labels.orch-namespace
    Examples: orchlet.option.node-labels.orch-namespace
      | arguments | option |
      | --node-labels=orch.io/role=db | --node-labels |

    @rule:orchlet.option.node-status-max-images.no-cap
    Examples: orchlet.option.node-status-max-images.no-cap
      | arguments | option |
      | --node-status-max-images=-2 | --node-status-max-images |

    @rule:orchlet.option.cloud-provider.in-tree-refused
    Examples: orchlet.option.cloud-provider.in-tree-refused
      | arguments | option |
      | --cloud-provider=aws | --cloud-provider |

    @rule:orchlet.option.oom-score-adj.range
    Examples: orchlet.option.oom-score-adj.range
      | arguments | option |
      | --oom-score-adj=1001 | --oom-score-adj |

    @rule:orchlet.option.qos-reserved.gate
    Examples: orchlet.option.qos-reserved.gate
      | arguments | option |
      | --qos-reserved=memory=50% | --qos-reserved |

    @rule:orchlet.option.qos-reserved.memory-only
    Examples: orchlet.option.qos-reserved.memory-only
      | arguments | option |
      | --feature-gates=QOSReserved=true --qos-reserved=cpu=50% | --qos-reserved |

    @rule:orchlet.option.register-with-taints.form
    Examples: orchlet.option.register-with-taints.form
      | arguments | option |
      | --register-with-taints=dedicated=db:Sometimes | --register-with-taints |

    @rule:orchlet.option.registry-qps.non-negative
    Examples: orchlet.option.registry-qps.non-negative
      | arguments | option |
      | --registry-qps=-1 | --registry-qps |

    @rule:orchlet.option.reserved-memory.totals
    Examples: orchlet.option.reserved-memory.totals
      | arguments | option |
      | --reserved-memory=0:memory=1Gi | --reserved-memory |

    @rule:orchlet.option.rotate-server-certificates.gate
    Examples: orchlet.option.rotate-server-certificates.gate
      | arguments | option |
      | --feature-gates=RotateOrchletServerCertificate=false --rotate-server-certificates | --rotate-server-certificates |

    @rule:orchlet.option.runonce.exclusive
    Examples: orchlet.option.runonce.exclusive
      | arguments | option |
      | --runonce --enable-server=true | --runonce |

    @rule:orchlet.option.tls-cipher-suites.known
    Examples: orchlet.option.tls-cipher-suites.known
      | arguments | option |
      | --tls-cipher-suites=TLS_BOGUS_SUITE | --tls-cipher-suites |

    @rule:orchlet.option.tls-min-version.allowed
    Examples: orchlet.option.tls-min-version.allowed
      | arguments | option |
      | --tls-min-version=VersionSSL30 | --tls-min-version |

    @rule:orchlet.option.topology-manager-policy.allowed
    Examples: orchlet.option.topology-manager-policy.allowed
      | arguments | option |
      | --topology-manager-policy=strict | --topology-manager-policy |

    @rule:orchlet.option.topology-manager-scope.allowed
    Examples: orchlet.option.topology-manager-scope.allowed
      | arguments | option |
      | --topology-manager-scope=node | --topology-manager-scope |

    @rule:orchlet.option.feature-gates.unknown
    Examples: orchlet.option.feature-gates.unknown
      | arguments | option |
      | --feature-gates=NoSuchGate=true | --feature-gates |

  Scenario Outline: the agent accepts <arguments>
    When the agent starts with "<arguments>"
    Then it starts

    @rule:orchlet.option.allowed-unsafe-sysctls.allow-list
    Examples: orchlet.option.allowed-unsafe-sysctls.allow-list
      | arguments |
      | --allowed-unsafe-sysctls=net.core.somaxconn,kernel.msg* |

    @rule:orchlet.option.hairpin-mode.runtime-plugin
    Examples: orchlet.option.hairpin-mode.runtime-plugin
      | arguments |
      | --hairpin-mode=hairpin-veth |
      | --hairpin-mode=none |

    @rule:orchlet.option.cloud-provider.external
    Examples: orchlet.option.cloud-provider.external
      | arguments |
      | --cloud-provider=external |

    @rule:orchlet.option.cpu-manager-policy-options.gates
    Examples: orchlet.option.cpu-manager-policy-options.gates
      | arguments |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=full-pcpus-only=true --cpu-manager-policy-options=strict-cpu-reservation=true --cpu-manager-policy-options=distribute-cpus-across-numa=true |
      | --cpu-manager-policy=static --reserved-cpus=0 --cpu-manager-policy-options=prefer-align-cpus-by-uncorecache=true |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyAlphaOptions=true --cpu-manager-policy-options=align-by-socket=true --cpu-manager-policy-options=distribute-cpus-across-cores=true |

    @rule:orchlet.option.cpu-manager-policy-options.exclusive
    Examples: orchlet.option.cpu-manager-policy-options.exclusive
      | arguments |
      | --cpu-manager-policy=static --reserved-cpus=0 --feature-gates=CPUManagerPolicyAlphaOptions=true --cpu-manager-policy-options=full-pcpus-only=false --cpu-manager-policy-options=distribute-cpus-across-cores=true |

    @rule:orchlet.option.log-text-split-stream.with-gate
    Examples: orchlet.option.log-text-split-stream.with-gate
      | arguments |
      | --feature-gates=LoggingAlphaOptions=true --log-text-split-stream |

    @rule:orchlet.option.manifest-url-header.repeatable
    Examples: orchlet.option.manifest-url-header.repeatable
      | arguments |
      | --manifest-url-header=a:1,a:2 --manifest-url-header=b:3 |

    @rule:orchlet.option.node-ip.dual-stack
    Examples: orchlet.option.node-ip.dual-stack
      | arguments |
      | --node-ip=10.0.0.5,fd00::5 |

    @rule:orchlet.option.node-labels.allowed-keys
    Examples: orchlet.option.node-labels.allowed-keys
      | arguments |
      | --node-labels=node.orch.io/pool=a,orchlet.orch.io/x=y,topology.orch.io/zone=z1,orch.io/hostname=n1,example.com/team=t |

    @rule:orchlet.option.tls-cipher-suites.listed
    Examples: orchlet.option.tls-cipher-suites.listed
      | arguments |
      | --tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_RC4_128_SHA |

  @rule:orchlet.option.version.prints
  Scenario Outline: <arguments> prints the version and exits
    When the agent is run with "<arguments>"
    Then its output shows the version

    Examples:
      | arguments     |
      | --version     |
      | --version=raw |

  @rule:orchlet.option.version.sets
  Scenario: --version=vX.Y.Z sets the reported version
    Given the agent's version is read
    Then the agent starts reporting its version followed by "-conformance.1"

  @rule:orchlet.option.config.relative
  Scenario: --config may name a file relative to the working directory
    Given an agent configuration file setting "--event-qps" to -1
    When the agent starts with "--config=orchlet.yaml"
    Then it refuses to start naming "--event-qps"

  @rule:orchlet.option.config.overridden-by-flags
  Scenario: a command-line option overrides the --config file
    Given an agent configuration file setting "--event-qps" to -1
    When the agent starts with ""
    Then it refuses to start naming "--event-qps"
    When the agent starts with "--event-qps=7"
    Then it starts

  @rule:orchlet.option.config-dir.overrides-config
  Scenario: a drop-in file overrides the --config file
    Given an agent configuration file setting "--max-pods" to -1
    And a drop-in configuration file setting "--max-pods" to 30
    When the agent starts with ""
    Then it starts

  @rule:orchlet.option.config-dir.overrides-config
  Scenario: a drop-in file overrides the built-in defaults
    Given a drop-in configuration file setting "--max-pods" to -1
    When the agent starts with ""
    Then it refuses to start naming "--max-pods"

  @rule:orchlet.option.exit-on-lock-contention.exits @component:runtime
  Scenario: with --exit-on-lock-contention an agent gives way to a contender, which waits for the lock and starts
    Given a container runtime
    And an agent runs holding the lock file "orchlet.lock" with "--exit-on-lock-contention"
    When another agent starts with the lock file "orchlet.lock" and "--exit-on-lock-contention"
    Then it starts
    And the running agent exits
