# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Key material of a test control plane: a CA, the apiserver's serving certificate and the service-account key pair.

Uses the ``cryptography`` package when it is importable (it is in the test venv), else the ``openssl`` command.
"""
from __future__ import annotations

import datetime
import importlib.util
import ipaddress
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Sequence

CA_NAME = "dsxos-test-ca"
VALID_DAYS = 3650


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _with_cryptography(directory: Path, ips: Sequence[str], dns: Sequence[str]) -> None:
    # pylint: disable=import-outside-toplevel
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def key_pem(key: rsa.RSAPrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())

    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    later = now + datetime.timedelta(days=VALID_DAYS)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(later)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names: List[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(later)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(directory / "ca.key", key_pem(ca_key))
    _write(directory / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(directory / "apiserver.key", key_pem(key))
    _write(directory / "apiserver.crt", cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(directory / "sa.key", key_pem(sa_key))
    public = sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    _write(directory / "sa.pub", public, 0o644)


def _openssl(*args: str) -> None:
    proc = subprocess.run(["openssl", *args], stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (args[0], proc.stderr.decode("utf-8", errors="replace")[-2000:]))


def _with_openssl(directory: Path, ips: Sequence[str], dns: Sequence[str]) -> None:
    d = str(directory)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/ca.key", "-out", d + "/ca.crt",
             "-days", str(VALID_DAYS), "-subj", "/CN=" + CA_NAME)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/apiserver.key", "-out", d + "/apiserver.csr",
             "-subj", "/CN=kube-apiserver")
    sans = ",".join(["DNS:" + name for name in dns] + ["IP:" + ip for ip in ips])
    ext = directory / "apiserver.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n" % sans, encoding="ascii")
    _openssl("x509", "-req", "-in", d + "/apiserver.csr", "-CA", d + "/ca.crt", "-CAkey", d + "/ca.key", "-CAcreateserial",
             "-out", d + "/apiserver.crt", "-days", str(VALID_DAYS), "-extfile", str(ext))
    _openssl("genrsa", "-out", d + "/sa.key", "2048")
    _openssl("rsa", "-in", d + "/sa.key", "-pubout", "-out", d + "/sa.pub")
    for name in ("ca.key", "apiserver.key", "sa.key"):
        os.chmod(directory / name, 0o600)


def make_certificates(directory: Path, ips: Sequence[str], dns: Sequence[str]) -> Dict[str, Path]:
    """Write ca.{crt,key}, apiserver.{crt,key} (SANs ``ips`` + ``dns``) and sa.{key,pub} into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("cryptography") is None:
        _with_openssl(directory, ips, dns)
    else:
        _with_cryptography(directory, ips, dns)
    return {name: directory / name for name in ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "sa.key", "sa.pub")}
