//! Certificates (rcgen) and the server's rustls configuration (`ring` provider).
//!
//! *Guarantees*: the server offers ALPN `h2` then `http/1.1` (kubectl and kube-rs speak HTTP/2
//! over TLS), TLS 1.2 and 1.3 with rustls's safe defaults, no client certificates. Certificates
//! are ECDSA P-256; the server certificate carries `127.0.0.1`, `::1` and `localhost` (plus any
//! extra IPs asked for) as subject alternative names and the `serverAuth` extended key usage.
//!
//! Lifetimes:
//! - the server certificate is valid for one year ([`SERVER_VALIDITY`]); the daemon renews it at
//!   start when it has less than 30 days left ([`RENEW_BEFORE`]), is expired, names other
//!   addresses than needed, is not signed by the CA, or lasts longer than a year (one an older
//!   drydock made, valid until 4096). Renewing it changes nothing for clients: they trust the CA.
//! - the CA is valid for 10 years ([`CA_VALIDITY`]), as kubeadm's: clients trust it through the
//!   kubeconfigs the daemon wrote, so renewing it would invalidate every one of them. It is never
//!   renewed silently: see [`crate::state_dir::StateDir::certificates`].
//!
//! Both start 5 minutes in the past ([`BACKDATE`]), for clocks a little apart.
//!
//! *Caveats*: a CA an older drydock made (valid until 4096) is kept as it is: replacing it would
//! invalidate every kubeconfig. Delete `ca.crt` and `ca.key` to have a 10-year one made.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use time::{Duration, OffsetDateTime};

/// How long the CA is valid: 10 years, as kubeadm's (renewing it would invalidate every
/// kubeconfig).
pub const CA_VALIDITY: Duration = Duration::days(3650);
/// How long a server certificate is valid: one year.
pub const SERVER_VALIDITY: Duration = Duration::days(365);
/// A server certificate with less than this left is renewed at start.
pub const RENEW_BEFORE: Duration = Duration::days(30);
/// How far in the past certificates start, for clocks a little apart.
pub const BACKDATE: Duration = Duration::minutes(5);

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

/// A new self-signed CA, valid from now (less [`BACKDATE`]) for [`CA_VALIDITY`].
pub fn generate_ca() -> Result<Issued, CertError> {
    generate_ca_at(OffsetDateTime::now_utc())
}

/// [`generate_ca`] as at `now`.
pub fn generate_ca_at(now: OffsetDateTime) -> Result<Issued, CertError> {
    let key = KeyPair::generate()?;
    let params = ca_params(now)?;
    let cert = params.self_signed(&key)?;
    Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

fn ca_params(now: OffsetDateTime) -> Result<CertificateParams, CertError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.distinguished_name.push(DnType::CommonName, "drydock daemon CA");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.not_before = now - BACKDATE;
    params.not_after = now + CA_VALIDITY;
    Ok(params)
}

/// A new server certificate for `names`, signed by the CA, valid from `now` (less [`BACKDATE`])
/// for [`SERVER_VALIDITY`], or until the CA expires if that is sooner.
pub fn issue_server_cert(
    ca_pem: &str,
    ca_key_pem: &str,
    names: &ServerNames,
    now: OffsetDateTime,
) -> Result<Issued, CertError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key)?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, "drydock daemon");
    params.not_before = now - BACKDATE;
    params.not_after = (now + SERVER_VALIDITY).min(not_after(ca_pem)?);
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

/// Why a server certificate must be replaced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Renewal {
    #[error("it expires on {not_after}, in less than 30 days")]
    Expiring { not_after: OffsetDateTime },
    #[error("it is not valid now (valid from {not_before} to {not_after})")]
    NotValidNow { not_before: OffsetDateTime, not_after: OffsetDateTime },
    #[error("it is valid until {not_after}, longer than a year (an older drydock made it)")]
    TooLong { not_after: OffsetDateTime },
    #[error("it is not signed by the daemon's CA")]
    OtherCa,
    #[error("it does not name every address the daemon listens on")]
    OtherNames,
}

/// Why the server certificate in `cert_pem` must be renewed at `now`, if it must: it is not
/// valid now, has less than [`RENEW_BEFORE`] left, lasts longer than [`SERVER_VALIDITY`] (plus
/// [`BACKDATE`] and a day), is not signed by the CA in `ca_pem`, or lacks a name in `names`.
///
/// *Guarantees*: `Ok(None)` means "keep it"; an error means a file is not a certificate at all
/// (the caller names it and does not replace it).
pub fn server_cert_renewal(
    cert_pem: &str,
    ca_pem: &str,
    names: &ServerNames,
    now: OffsetDateTime,
) -> Result<Option<Renewal>, CertError> {
    let cert_der = pem_der(cert_pem)?;
    let cert = cert_der.parse_x509().map_err(|e| CertError::X509(e.to_string()))?;
    let ca_der = pem_der(ca_pem)?;
    let ca = ca_der.parse_x509().map_err(|e| CertError::X509(e.to_string()))?;
    let (not_before, not_after) = (cert.validity().not_before.to_datetime(), cert.validity().not_after.to_datetime());
    if now < not_before || now > not_after {
        return Ok(Some(Renewal::NotValidNow { not_before, not_after }));
    }
    if not_after - now < RENEW_BEFORE {
        return Ok(Some(Renewal::Expiring { not_after }));
    }
    if not_after - not_before > SERVER_VALIDITY + BACKDATE + Duration::days(1) {
        return Ok(Some(Renewal::TooLong { not_after }));
    }
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return Ok(Some(Renewal::OtherCa));
    }
    Ok((!has_names(&cert, names)).then_some(Renewal::OtherNames))
}

/// Whether the server certificate in `cert_pem` may be kept at `now`: see
/// [`server_cert_renewal`].
pub fn server_cert_fits(
    cert_pem: &str,
    ca_pem: &str,
    names: &ServerNames,
    now: OffsetDateTime,
) -> Result<bool, CertError> {
    Ok(server_cert_renewal(cert_pem, ca_pem, names, now)?.is_none())
}

/// When the certificate in `pem` (the first one) expires.
pub fn not_after(pem: &str) -> Result<OffsetDateTime, CertError> {
    let der = pem_der(pem)?;
    let cert = der.parse_x509().map_err(|e| CertError::X509(e.to_string()))?;
    Ok(cert.validity().not_after.to_datetime())
}

fn pem_der(pem: &str) -> Result<x509_parser::pem::Pem, CertError> {
    let (_, der) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| CertError::Pem(e.to_string()))?;
    Ok(der)
}

/// Whether `cert` carries every name in `names` as a subject alternative name.
fn has_names(cert: &x509_parser::certificate::X509Certificate<'_>, names: &ServerNames) -> bool {
    let Ok(Some(san)) = cert.subject_alternative_name() else { return false };
    let mut has_ips = Vec::new();
    let mut has_dns = Vec::new();
    for name in &san.value.general_names {
        match name {
            x509_parser::extensions::GeneralName::IPAddress(octets) => has_ips.push(ip_from_octets(octets)),
            x509_parser::extensions::GeneralName::DNSName(dns) => has_dns.push(dns.to_string()),
            _ => {}
        }
    }
    names.ips.iter().all(|ip| has_ips.contains(&Some(*ip))) && names.dns.iter().all(|d| has_dns.contains(d))
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

    fn now() -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    #[test]
    fn issued_cert_fits_its_names_and_ca_only() {
        let ca = generate_ca_at(now()).unwrap();
        let names = server_names(&[]);
        let server = issue_server_cert(&ca.cert_pem, &ca.key_pem, &names, now()).unwrap();
        assert!(server_cert_fits(&server.cert_pem, &ca.cert_pem, &names, now()).unwrap());
        let wider = server_names(&["10.1.2.3".parse().unwrap()]);
        let renewal = server_cert_renewal(&server.cert_pem, &ca.cert_pem, &wider, now()).unwrap();
        assert_eq!(renewal, Some(Renewal::OtherNames), "missing IP");
        let other_ca = generate_ca_at(now()).unwrap();
        let renewal = server_cert_renewal(&server.cert_pem, &other_ca.cert_pem, &names, now()).unwrap();
        assert_eq!(renewal, Some(Renewal::OtherCa));
        assert!(server_cert_fits("garbage", &ca.cert_pem, &names, now()).is_err());
        let config = server_config(&server.cert_pem, &server.key_pem).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    fn validity(pem: &str) -> (OffsetDateTime, OffsetDateTime) {
        let der = pem_der(pem).unwrap();
        let cert = der.parse_x509().unwrap();
        (cert.validity().not_before.to_datetime(), cert.validity().not_after.to_datetime())
    }

    #[test]
    fn a_fresh_server_cert_lasts_a_year_and_the_ca_ten() {
        let ca = generate_ca_at(now()).unwrap();
        let (ca_from, ca_to) = validity(&ca.cert_pem);
        assert!(ca_to - ca_from <= Duration::days(3651), "{ca_from} .. {ca_to}");
        assert!(ca_to - now() >= Duration::days(3649), "{ca_to}");
        let server = issue_server_cert(&ca.cert_pem, &ca.key_pem, &server_names(&[]), now()).unwrap();
        let (from, to) = validity(&server.cert_pem);
        assert!(to - from <= Duration::days(366), "{from} .. {to}");
        assert!(to - now() >= Duration::days(364), "{to}");
        assert!(from <= now(), "{from}");
    }

    #[test]
    fn a_server_cert_near_its_end_or_too_long_is_renewed() {
        let ca = generate_ca_at(now() - Duration::days(400)).unwrap();
        let names = server_names(&[]);
        let late = issue_server_cert(&ca.cert_pem, &ca.key_pem, &names, now() - Duration::days(355)).unwrap();
        let renewal = server_cert_renewal(&late.cert_pem, &ca.cert_pem, &names, now()).unwrap();
        assert!(matches!(renewal, Some(Renewal::Expiring { .. })), "{renewal:?}");
        let expired = issue_server_cert(&ca.cert_pem, &ca.key_pem, &names, now() - Duration::days(370)).unwrap();
        let renewal = server_cert_renewal(&expired.cert_pem, &ca.cert_pem, &names, now()).unwrap();
        assert!(matches!(renewal, Some(Renewal::NotValidNow { .. })), "{renewal:?}");
        // An older drydock's: rcgen's default validity, until 4096.
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
        let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, KeyPair::from_pem(&ca.key_pem).unwrap()).unwrap();
        let forever = params.signed_by(&KeyPair::generate().unwrap(), &issuer).unwrap().pem();
        let renewal = server_cert_renewal(&forever, &ca.cert_pem, &names, now()).unwrap();
        assert!(matches!(renewal, Some(Renewal::TooLong { .. })), "{renewal:?}");
    }

    #[test]
    fn a_server_cert_does_not_outlive_its_ca() {
        let ca = generate_ca_at(now() - CA_VALIDITY + Duration::days(100)).unwrap();
        let server = issue_server_cert(&ca.cert_pem, &ca.key_pem, &server_names(&[]), now()).unwrap();
        assert_eq!(validity(&server.cert_pem).1, not_after(&ca.cert_pem).unwrap());
    }

    #[test]
    fn unspecified_and_duplicate_ips_are_left_out() {
        let names = server_names(&["0.0.0.0".parse().unwrap(), "127.0.0.1".parse().unwrap()]);
        assert_eq!(names.ips.len(), 2);
    }
}
