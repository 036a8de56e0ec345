//! Certificates (rcgen) and the server's rustls configuration (`ring` provider).
//!
//! *Guarantees*: the server offers ALPN `h2` then `http/1.1` (kubectl and kube-rs speak HTTP/2
//! over TLS), TLS 1.2 and 1.3 with rustls's safe defaults, no client certificates. Certificates
//! are ECDSA P-256; the server certificate carries `127.0.0.1`, `::1` and `localhost` (plus any
//! extra IPs asked for) as subject alternative names and the `serverAuth` extended key usage.
//!
//! *Caveats*: the certificates do not expire in practice (rcgen's default validity, up to year
//! 4096): they are trusted only through the daemon's own CA, which exists only in its state dir
//! and the kubeconfigs it writes.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Why a certificate could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot generate or sign a certificate")]
    Rcgen(#[from] rcgen::Error),
    #[error("not a PEM certificate or key: {0}")]
    Pem(String),
    #[error("not a usable X.509 certificate: {0}")]
    X509(String),
    #[error("rustls refused the certificate or key")]
    Rustls(#[from] rustls::Error),
}

/// A certificate and its private key, as PEM.
pub struct Issued {
    pub cert_pem: String,
    /// Secret.
    pub key_pem: String,
}

/// The names a server certificate must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerNames {
    pub ips: Vec<IpAddr>,
    pub dns: Vec<String>,
}

/// The loopback names plus `extra_ips` (duplicates and unspecified addresses left out).
pub fn server_names(extra_ips: &[IpAddr]) -> ServerNames {
    let mut ips = vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)];
    for ip in extra_ips {
        if !ip.is_unspecified() && !ips.contains(ip) {
            ips.push(*ip);
        }
    }
    ServerNames { ips, dns: vec!["localhost".to_string()] }
}

/// A new self-signed CA.
pub fn generate_ca() -> Result<Issued, CertError> {
    let key = KeyPair::generate()?;
    let params = ca_params()?;
    let cert = params.self_signed(&key)?;
    Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

fn ca_params() -> Result<CertificateParams, CertError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.distinguished_name.push(DnType::CommonName, "drydock daemon CA");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ok(params)
}

/// A new server certificate for `names`, signed by the CA.
pub fn issue_server_cert(ca_pem: &str, ca_key_pem: &str, names: &ServerNames) -> Result<Issued, CertError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key)?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, "drydock daemon");
    params.subject_alt_names = names.ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    for dns in &names.dns {
        params.subject_alt_names.push(SanType::DnsName(dns.as_str().try_into()?));
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// Whether the server certificate in `cert_pem` is currently valid, signed by the CA in `ca_pem`
/// and carries every name in `names`.
///
/// *Guarantees*: `Ok(false)` means "issue a new one"; an error means a file is not a certificate
/// at all (the caller names it and does not replace it).
pub fn server_cert_fits(cert_pem: &str, ca_pem: &str, names: &ServerNames) -> Result<bool, CertError> {
    let (_, cert_pem) =
        x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| CertError::Pem(e.to_string()))?;
    let cert = cert_pem.parse_x509().map_err(|e| CertError::X509(e.to_string()))?;
    let (_, ca_pem) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).map_err(|e| CertError::Pem(e.to_string()))?;
    let ca = ca_pem.parse_x509().map_err(|e| CertError::X509(e.to_string()))?;
    if !cert.validity().is_valid() || cert.verify_signature(Some(ca.public_key())).is_err() {
        return Ok(false);
    }
    let Ok(Some(san)) = cert.subject_alternative_name() else { return Ok(false) };
    let mut has_ips = Vec::new();
    let mut has_dns = Vec::new();
    for name in &san.value.general_names {
        match name {
            x509_parser::extensions::GeneralName::IPAddress(octets) => has_ips.push(ip_from_octets(octets)),
            x509_parser::extensions::GeneralName::DNSName(dns) => has_dns.push(dns.to_string()),
            _ => {}
        }
    }
    Ok(names.ips.iter().all(|ip| has_ips.contains(&Some(*ip))) && names.dns.iter().all(|d| has_dns.contains(d)))
}

fn ip_from_octets(octets: &[u8]) -> Option<IpAddr> {
    match octets.len() {
        4 => <[u8; 4]>::try_from(octets).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(octets).ok().map(IpAddr::from),
        _ => None,
    }
}

/// The ring crypto provider (no aws-lc: it needs cmake and nasm to build).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server's rustls configuration: `cert_pem` (the certificate, optionally followed by its
/// chain) and its key, ALPN `h2` and `http/1.1`.
pub fn server_config(cert_pem: &str, key_pem: &str) -> Result<Arc<ServerConfig>, CertError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Pem(e.to_string()))?;
    if chain.is_empty() {
        return Err(CertError::Pem("no certificate in the server certificate file".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| CertError::Pem(e.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn issued_cert_fits_its_names_and_ca_only() {
        let ca = generate_ca().unwrap();
        let names = server_names(&[]);
        let server = issue_server_cert(&ca.cert_pem, &ca.key_pem, &names).unwrap();
        assert!(server_cert_fits(&server.cert_pem, &ca.cert_pem, &names).unwrap());
        let wider = server_names(&["10.1.2.3".parse().unwrap()]);
        assert!(!server_cert_fits(&server.cert_pem, &ca.cert_pem, &wider).unwrap(), "missing IP");
        let other_ca = generate_ca().unwrap();
        assert!(!server_cert_fits(&server.cert_pem, &other_ca.cert_pem, &names).unwrap(), "other CA");
        assert!(server_cert_fits("garbage", &ca.cert_pem, &names).is_err());
        let config = server_config(&server.cert_pem, &server.key_pem).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    #[test]
    fn unspecified_and_duplicate_ips_are_left_out() {
        let names = server_names(&["0.0.0.0".parse().unwrap(), "127.0.0.1".parse().unwrap()]);
        assert_eq!(names.ips.len(), 2);
    }
}
