"""ControlPlane: etcd, kube-apiserver, controller-manager, scheduler and kwok (fake nodes) on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import httpx
from kubernetes import client

from tests.controlplane.binaries import Binaries
from tests.controlplane.kubeconfig import client_configuration, write_kubeconfig
from tests.controlplane.nodes import (
    DEFAULT_NODE_COUNT,
    DEFAULT_SHAPE,
    MANAGED_ANNOTATION,
    MANAGED_VALUE,
    STAGES_FILE,
    create_nodes,
)
from tests.controlplane.pki import CertFiles, CertificateAuthority, write_service_account_keys
from tests.controlplane.processes import ManagedProcess, free_port

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMISSION_CLIENT = "podsizer-apiserver-client"
"""The CN of the client certificate the apiserver presents to every admission webhook (as the chart's)."""
_NAME_RE = re.compile(r"[^a-zA-Z0-9_.-]+")
_Probe = Callable[[], tuple[bool, str]]


class ControlPlaneError(RuntimeError):
    """The control plane did not come up (or went away); the message carries the processes' log tails."""


def _mkdtemp(prefix: str, prefer: Path) -> Path:
    base = prefer if prefer.is_dir() else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def _http_ok(url: str, verify: ssl.SSLContext | bool) -> _Probe:
    """Ready when GET `url` answers HTTP 200; otherwise the error or the status and the answer's tail."""

    def probe() -> tuple[bool, str]:
        try:
            answer = httpx.get(url, verify=verify, timeout=5.0)
        except httpx.HTTPError as e:
            return False, repr(e)
        return answer.status_code == 200, f"HTTP {answer.status_code} {answer.text[-300:]}"

    return probe


class ControlPlane:
    """A real control plane: etcd (fresh data dir), kube-apiserver (RBAC; x509 and SA tokens), the KCM, the
    scheduler, and kwok playing the kubelet of `node_count` fake nodes (`node_names`, DEFAULT_SHAPE).
    `apiserver_args` are added to kube-apiserver's command line (e.g. an audit log for a benchmark). The
    apiserver presents a client certificate (CN ADMISSION_CLIENT, from `admission_client_ca_file`'s CA) to
    every admission webhook, through its AdmissionConfiguration (docs/webhook.md#authenticated-admission).

    Use as a context manager, or call start() and stop(). Every process logs to a file under `log_dir`.
    """

    def __init__(
        self,
        binaries: Binaries,
        workdir: Path | None = None,
        node_count: int = DEFAULT_NODE_COUNT,
        apiserver_args: Sequence[str] = (),
    ) -> None:
        self.binaries = binaries
        self.apiserver_args = list(apiserver_args)
        self.node_names = [f"kwok-node-{i}" for i in range(node_count)]
        self._own_workdir = workdir is None
        self.workdir = workdir if workdir is not None else _mkdtemp("podsizer-cp-", Path("/tmp"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.workdir / "logs"
        self.pki_dir = self.workdir / "pki"
        self.log_dir.mkdir(exist_ok=True)
        self.pki_dir.mkdir(exist_ok=True)
        self._etcd_dir: Path | None = None
        self.processes: dict[str, ManagedProcess] = {}
        self.secure_port = 0
        self.kubeconfig_path = self.workdir / "admin.kubeconfig"
        self.ca: CertificateAuthority | None = None
        self._admin: CertFiles | None = None

    # lifecycle

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def server(self) -> str:
        """The apiserver's URL, https://127.0.0.1:<port>."""
        return f"https://127.0.0.1:{self.secure_port}"

    @property
    def admission_client_ca_file(self) -> Path:
        """The CA of the client certificate the apiserver presents to admission webhooks."""
        return self.pki_dir / "admission" / "ca.crt"

    @property
    def ca_file(self) -> Path:
        """The CA that signed the apiserver's serving certificate and every client certificate."""
        return self.pki_dir / "ca.crt"

    def start(self, timeout_s: float = 180.0) -> None:
        """Starts etcd, the apiserver, the controller-manager, the scheduler and kwok; returns once all are
        ready and the default kwok nodes are Ready.

        On failure the processes are stopped and ControlPlaneError carries their log tails; the log files
        stay until stop().
        """
        try:
            self._write_pki()
            self._start_etcd(timeout_s)
            self._start_apiserver(timeout_s)
            self._start_controller_manager(timeout_s)
            self._start_scheduler(timeout_s)
            self._start_kwok(timeout_s)
            self._wait_for_default_service_account(timeout_s)
            create_nodes(self.api_client(), self.node_names, DEFAULT_SHAPE, timeout_s)
        except BaseException:
            self._stop_processes()  # the logs stay until stop(), for copy_logs()
            raise

    def _stop_processes(self) -> None:
        for name in ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            proc = self.processes.get(name)
            if proc is not None:
                proc.stop()

    def stop(self) -> None:
        """Stops the processes (controller-manager, apiserver, etcd), removes the data and temp dirs."""
        self._stop_processes()
        if self._etcd_dir is not None:
            shutil.rmtree(self._etcd_dir, ignore_errors=True)
            self._etcd_dir = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def copy_logs(self, destination: Path) -> None:
        """Copies every process log to `destination` (for CI artifacts), before stop() removes them."""
        destination.mkdir(parents=True, exist_ok=True)
        for log in self.log_dir.glob("*.log"):
            shutil.copy2(log, destination / log.name)

    def describe(self) -> str:
        """Each process's state and log tail, for a failure message."""
        return "\n\n".join(p.describe_failure() for p in self.processes.values())

    def check_alive(self) -> None:
        """Raises ControlPlaneError when a control-plane process has exited."""
        dead = [p for p in self.processes.values() if p.exit_code() is not None]
        if dead:
            raise ControlPlaneError(
                "control-plane process ended:\n" + "\n\n".join(p.describe_failure() for p in dead)
            )

    # clients

    def configuration(self, cert: CertFiles | None = None, token: str | None = None) -> client.Configuration:
        """A kubernetes-client Configuration: the admin's (system:masters) unless a cert or token is given."""
        if cert is None and token is None:
            cert = self._admin_cert()
        return client_configuration(self.server, self.ca_file, cert=cert, token=token)

    def api_client(self) -> client.ApiClient:
        """An ApiClient authenticated as the cluster admin (client certificate, group system:masters)."""
        return client.ApiClient(self.configuration())

    def user_cert(self, user: str, groups: list[str] | None = None) -> CertFiles:
        """A client certificate the apiserver authenticates as `user` in `groups` (no roles granted)."""
        stem = "user-" + _NAME_RE.sub("_", user)
        return self._ca().issue_client(stem, user, list(groups or []))

    def client_for_user(self, user: str, groups: list[str] | None = None) -> client.ApiClient:
        """An ApiClient authenticated as `user` in `groups`, with only what RBAC grants them."""
        return client.ApiClient(self.configuration(cert=self.user_cert(user, groups)))

    def kubeconfig_for_user(self, user: str, groups: list[str] | None = None) -> Path:
        """A kubeconfig file for `user` in `groups`, for subprocesses (webhook, recommender)."""
        cert = self.user_cert(user, groups)
        path = self.workdir / f"{cert.cert.stem}.kubeconfig"
        return write_kubeconfig(path, self.server, self.ca_file, user, cert=cert)

    def service_account_token(self, namespace: str, name: str, expiration_s: int = 3600) -> str:
        """A bound token for ServiceAccount namespace/name from the TokenRequest API (the SA must exist)."""
        core = client.CoreV1Api(self.api_client())
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(
                audiences=[SERVICE_ACCOUNT_ISSUER], expiration_seconds=expiration_s
            )
        )
        answer = core.create_namespaced_service_account_token(name, namespace, request)
        if answer.status is None or not answer.status.token:
            raise ControlPlaneError(f"TokenRequest for {namespace}/{name} returned no token")
        return str(answer.status.token)

    def client_for_service_account(self, namespace: str, name: str) -> client.ApiClient:
        """An ApiClient that authenticates with the ServiceAccount's token, as a pod of that SA would."""
        return client.ApiClient(self.configuration(token=self.service_account_token(namespace, name)))

    def kubeconfig_for_service_account(self, namespace: str, name: str) -> Path:
        """A kubeconfig file holding a token of ServiceAccount namespace/name, for subprocesses."""
        user = f"system:serviceaccount:{namespace}:{name}"
        path = self.workdir / f"sa-{namespace}-{name}.kubeconfig"
        token = self.service_account_token(namespace, name)
        return write_kubeconfig(path, self.server, self.ca_file, user, token=token)

    # internals

    def _ca(self) -> CertificateAuthority:
        if self.ca is None:
            raise ControlPlaneError("control plane not started")
        return self.ca

    def _admin_cert(self) -> CertFiles:
        if self._admin is None:
            raise ControlPlaneError("control plane not started")
        return self._admin

    def _write_pki(self) -> None:
        self.ca = CertificateAuthority(self.pki_dir)
        self._serving = self.ca.issue_server(
            "apiserver",
            ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            ["127.0.0.1", "10.0.0.1"],
        )
        self._admin = self.ca.issue_client("admin", "podsizer-test-admin", ["system:masters"])
        # the apiserver's identity at a kubelet (logs, exec: the real node's), as kubeadm makes it
        self._kubelet_client = self.ca.issue_client(
            "apiserver-kubelet-client", "kube-apiserver-kubelet-client", ["system:masters"]
        )
        self._sa_keys = write_service_account_keys(self.pki_dir)
        self._admission_config = self._write_admission_config()

    def _write_admission_config(self) -> Path:
        """What a cluster administrator writes for authenticated admission: the client certificate (from a
        CA of its own), a kubeconfig presenting it to every webhook (user "*") and the
        AdmissionConfiguration naming that kubeconfig for the mutating webhook plugin."""
        directory = self.pki_dir / "admission"
        directory.mkdir(parents=True, exist_ok=True)
        client_cert = CertificateAuthority(directory, "podsizer-test-admission-ca").issue_client(
            "apiserver-client", ADMISSION_CLIENT, []
        )
        kubeconfig = directory / "webhooks.kubeconfig"
        user = {"client-certificate": str(client_cert.cert), "client-key": str(client_cert.key)}
        users = [{"name": "*", "user": user}]
        kubeconfig.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "users": users}))
        group = "apiserver.config.k8s.io/v1"
        webhooks = {"kind": "WebhookAdmissionConfiguration", "kubeConfigFile": str(kubeconfig)}
        plugins = [{"name": "MutatingAdmissionWebhook", "configuration": {"apiVersion": group, **webhooks}}]
        config = directory / "admission.yaml"
        body = {"apiVersion": group, "kind": "AdmissionConfiguration", "plugins": plugins}
        config.write_text(json.dumps(body))
        return config

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        proc = ManagedProcess(name, argv, self.log_dir / f"{name}.log")
        self.processes[name] = proc
        return proc

    def _wait(self, what: str, ready: ManagedProcess, probe: _Probe, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            if ready.exit_code() is not None:
                raise ControlPlaneError(f"{what} exited before it was ready:\n{self.describe()}")
            ok, last = probe()
            if ok:
                return
            time.sleep(0.5)
        raise ControlPlaneError(
            f"{what} not ready after {timeout_s:.0f} s (last: {last}):\n{self.describe()}"
        )

    def _start_etcd(self, timeout_s: float) -> None:
        # tmpfs when there is one: etcd fsyncs every write, and the tests do not need durability.
        self._etcd_dir = _mkdtemp("podsizer-etcd-", Path("/dev/shm"))
        self.etcd_port, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer}"
        proc = self._spawn(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=podsizer-test",
                f"--data-dir={self._etcd_dir}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=podsizer-test={peer_url}",
                "--initial-cluster-state=new",
                "--logger=zap",
                "--log-level=warn",
            ],
        )

        def probe() -> tuple[bool, str]:
            try:
                answer = httpx.get(f"{client_url}/health", timeout=2.0)
            except httpx.HTTPError as e:
                return False, repr(e)
            return answer.status_code == 200 and '"true"' in answer.text, answer.text

        self._wait("etcd", proc, probe, timeout_s)

    def _admin_ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        admin = self._admin_cert()
        ctx.load_cert_chain(str(admin.cert), str(admin.key))
        return ctx

    def _start_apiserver(self, timeout_s: float) -> None:
        self.secure_port = free_port()
        proc = self._spawn(
            "kube-apiserver",
            [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={self._serving.cert}",
                f"--tls-private-key-file={self._serving.key}",
                f"--secure-port={self.secure_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                # Node: the real node's kubelet (system:node:<name>) gets exactly what a kubelet may read and
                # write, as in a cluster; NodeRestriction keeps it to its own Node and pods.
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                # A webhook's clientConfig.service is called at its Service's endpoints (pod IPs, reachable
                # on the real node's bridge): there is no kube-proxy to route a ClusterIP.
                "--enable-aggregator-routing=true",
                f"--kubelet-client-certificate={self._kubelet_client.cert}",
                f"--kubelet-client-key={self._kubelet_client.key}",
                "--kubelet-preferred-address-types=InternalIP",  # node names resolve nowhere here
                f"--client-ca-file={self.ca_file}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={self._sa_keys.cert}",
                f"--service-account-signing-key-file={self._sa_keys.key}",
                f"--admission-control-config-file={self._admission_config}",
                "--v=1",
                *self.apiserver_args,
            ],
        )
        self.write_admin_kubeconfig()
        probe = _http_ok(f"{self.server}/readyz", self._admin_ssl_context())
        self._wait("kube-apiserver", proc, probe, timeout_s)

    def write_admin_kubeconfig(self) -> Path:
        """(Re)writes the admin kubeconfig at `kubeconfig_path`."""
        return write_kubeconfig(
            self.kubeconfig_path, self.server, self.ca_file, "podsizer-test-admin", cert=self._admin_cert()
        )

    def _start_controller_manager(self, timeout_s: float) -> None:
        port = free_port()
        kubeconfig = str(self.kubeconfig_path)
        proc = self._spawn(
            "kube-controller-manager",
            [
                str(self.binaries.kube_controller_manager),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                "--controllers=*",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                f"--service-account-private-key-file={self._sa_keys.key}",
                f"--root-ca-file={self.ca_file}",
                f"--cluster-signing-cert-file={self.ca_file}",
                f"--cluster-signing-key-file={self.pki_dir / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                "--v=1",
            ],
        )
        # Its serving certificate is self-signed into --cert-dir; /healthz is always-allowed.
        probe = _http_ok(f"https://127.0.0.1:{port}/healthz", verify=False)
        self._wait("kube-controller-manager", proc, probe, timeout_s)

    def _start_scheduler(self, timeout_s: float) -> None:
        port = free_port()
        kubeconfig = str(self.kubeconfig_path)
        proc = self._spawn(
            "kube-scheduler",
            [
                str(self.binaries.kube_scheduler),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        probe = _http_ok(f"https://127.0.0.1:{port}/healthz", verify=False)
        self._wait("kube-scheduler", proc, probe, timeout_s)

    def _start_kwok(self, timeout_s: float) -> None:
        # kwok plays the kubelet of the Nodes annotated kwok.x-k8s.io/node=fake (stages: nodes Ready with
        # leases, pods Running and Ready once bound, removed when deleted). Pod IPs outside the service range.
        port = free_port()
        proc = self._spawn(
            "kwok",
            [
                str(self.binaries.kwok),
                f"--config={STAGES_FILE}",
                f"--kubeconfig={self.kubeconfig_path}",
                f"--manage-nodes-with-annotation-selector={MANAGED_ANNOTATION}={MANAGED_VALUE}",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.1/16",
                "--node-ip=10.1.0.1",
                f"--server-address=127.0.0.1:{port}",
                "--v=WARN",  # INFO logs every node and pod patch
            ],
        )
        self._wait("kwok", proc, _http_ok(f"http://127.0.0.1:{port}/healthz", verify=False), timeout_s)

    def _wait_for_default_service_account(self, timeout_s: float) -> None:
        core = client.CoreV1Api(self.api_client())
        proc = self.processes["kube-controller-manager"]

        def probe() -> tuple[bool, str]:
            try:
                core.read_namespaced_service_account("default", "default")
            except client.ApiException as e:
                return False, f"ServiceAccount default/default: HTTP {e.status}"
            return True, "ok"

        self._wait("controller-manager's serviceaccount controller", proc, probe, timeout_s)
