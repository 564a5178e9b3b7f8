//! `rtcc send/recv --pcap FILE`: what one end sends and receives, as a pcap file (the records
//! [`rtcc_core::wire::pcap`] encodes), with the sockets' real addresses and ports and wall-clock
//! timestamps: a capture on that end's host, as tcpdump would take it. SRTP datagrams are
//! captured as they are on the wire (encrypted). The file is written beside its name and moved
//! there when the end stops, so an unfinished capture never looks like a finished one.

use rtcc_core::packet::Ecn;
use rtcc_core::wire::pcap;
use rtcc_core::Time;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct LiveCapture {
    out: pcap::Writer<BufWriter<File>>,
    path: PathBuf,
    partial: PathBuf,
    /// Datagrams of IPv6 sockets, which a raw-IPv4 capture cannot hold.
    pub skipped_ipv6: u64,
}

impl LiveCapture {
    pub fn create(path: &Path) -> io::Result<LiveCapture> {
        let partial = PathBuf::from(format!("{}.partial", path.display()));
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let out = File::create(&partial)
            .and_then(|f| pcap::Writer::new(BufWriter::new(f)))
            .map_err(named)?;
        Ok(LiveCapture {
            out,
            path: path.to_path_buf(),
            partial,
            skipped_ipv6: 0,
        })
    }

    /// A datagram of `bytes` from `src` to `dst`, now.
    pub fn datagram(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        ecn: Ecn,
        bytes: &[u8],
    ) -> io::Result<()> {
        let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (src, dst) else {
            self.skipped_ipv6 += 1;
            return Ok(());
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let size = (bytes.len() + pcap::IP_UDP_HEADERS) as u32;
        let t = Time(now.as_nanos() as u64);
        self.out.write(t, src, dst, ecn, bytes, size)
    }

    /// The end stopped: complete the file and give it its name.
    pub fn finish(self) -> io::Result<()> {
        self.out.into_inner().flush()?;
        std::fs::rename(&self.partial, &self.path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

/// This end's address as a capture on its host shows it talking with `peer`: the socket's
/// own, or, for a socket bound to any address, the address the host's routing picks to reach
/// `peer` (found by connecting a scratch UDP socket, which sends nothing), with the socket's port.
pub fn local_towards(local: SocketAddr, peer: SocketAddr) -> SocketAddr {
    if !local.ip().is_unspecified() {
        return local;
    }
    let any: SocketAddr = match peer {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    std::net::UdpSocket::bind(any)
        .and_then(|s| s.connect(peer).and_then(|_| s.local_addr()))
        .map_or(local, |a| SocketAddr::new(a.ip(), local.port()))
}
