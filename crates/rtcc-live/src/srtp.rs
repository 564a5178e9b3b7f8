//! SRTP and SRTCP (RFC 3711) for `rtcc-live send` and `recv`: every RTP packet is encrypted and
//! authenticated, every RTCP compound too, and each end accepts only what authenticates.
//!
//! **Crypto.** Not ours: the `webrtc-srtp` crate (webrtc-rs), a pure-Rust implementation on the
//! RustCrypto primitives. Two protection profiles:
//! - `AES_CM_128_HMAC_SHA1_80` (RFC 3711 §4: AES-128 in counter mode, an 80-bit HMAC-SHA1 tag;
//!   the default, and what every SRTP stack speaks), master key 16 bytes, salt 14;
//! - `AEAD_AES_128_GCM` (RFC 7714: AES-128-GCM, a 128-bit tag), key 16 bytes, salt 12.
//!
//! **Keys.** One master key and salt, given as the base64 of key ‖ salt, the form of an SDES
//! `inline:` key (RFC 4568 §6.1) and of ffmpeg's `srtp_out_params`: in a file
//! (`--srtp-key-file`) or in the environment (`RTCC_SRTP_KEY`). Both ends use the same master
//! key in both directions; the session keys differ per packet stream because the SSRC is part
//! of the counter (RFC 3711 §4.1.1), and the sender's and the receiver's SSRCs differ. Make one
//! with `head -c 30 /dev/urandom | base64` (28 bytes for GCM).
//!
//! **What is refused** (counted, never a panic): a datagram too short to hold a header and a
//! tag; one whose SSRC is not one the end expects (the sender's three streams at a receiver,
//! the receiver's SSRC at a sender), checked before the library sees it, so that forged SSRCs
//! cannot grow its per-SSRC state; one that does not authenticate; a replay (RFC 3711 §3.3.2:
//! a sliding window of [`REPLAY_WINDOW`] packet indices per stream, [`ReplayWindow`]). The
//! replay list is ours, updated only by packets that authenticated, as §3.3 says: the
//! library's own starts its window at the first packet it checks, authentic or not, so one
//! forged packet on a stream not yet seen (the RTX or FEC stream early in a call) made it refuse
//! that stream's real packets for good. An SRTCP packet whose E flag says "not encrypted" is
//! refused: the library returns those without checking their tag (webrtc-srtp 0.17.2,
//! `decrypt_rtcp` of the AES-CM profile), and rtcc always encrypts SRTCP.
//!
//! **Sizes.** The tag is part of the modelled size: the sender pads an RTP packet to its
//! modelled size minus the tag before it encrypts, so SRTP packets are exactly as large on the
//! wire as plain ones and as the simulator's; the receiver hands its endpoint the plaintext
//! with the size the datagram had on the wire. SRTCP adds its index and tag (14 or 20 bytes) to
//! feedback, which the simulator does not model.

use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::wire::SeqUnwrapper;
use std::path::Path;
use webrtc_srtp::context::Context;
use webrtc_srtp::protection_profile::ProtectionProfile;

/// Environment variable that holds the base64 key (when no key file is given).
pub const KEY_ENV: &str = "RTCC_SRTP_KEY";
/// Packet indices of one stream a packet may arrive out of order by and still be accepted
/// (RFC 3711 §3.3.2 asks for at least 64; libsrtp uses 128). Larger, for reordering links.
pub const REPLAY_WINDOW: u64 = 1024;

/// An SRTP protection profile rtcc offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    AesCm128HmacSha1_80,
    AeadAes128Gcm,
}

impl Profile {
    /// The profile names of RFC 4568 §6.2 and RFC 7714 §14.2.
    pub const NAMES: [(&'static str, Profile); 2] = [
        ("AES_CM_128_HMAC_SHA1_80", Profile::AesCm128HmacSha1_80),
        ("AEAD_AES_128_GCM", Profile::AeadAes128Gcm),
    ];

    pub fn parse(name: &str) -> Result<Profile, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!(
                    "--srtp-profile {name:?}: not a profile rtcc offers ({})",
                    names.join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, p)| *p == self).unwrap().0
    }

    fn library(self) -> ProtectionProfile {
        match self {
            Profile::AesCm128HmacSha1_80 => ProtectionProfile::Aes128CmHmacSha1_80,
            Profile::AeadAes128Gcm => ProtectionProfile::AeadAes128Gcm,
        }
    }

    /// Bytes an encrypted RTP packet has beyond its plaintext.
    pub fn rtp_overhead(self) -> usize {
        match self {
            Profile::AesCm128HmacSha1_80 => 10,
            Profile::AeadAes128Gcm => 16,
        }
    }

    /// ... and an encrypted RTCP compound (the SRTCP index and the tag).
    pub fn rtcp_overhead(self) -> usize {
        4 + self.rtp_overhead()
    }
}

/// A master key and salt for a profile.
#[derive(Clone, PartialEq, Eq)]
pub struct Keying {
    pub profile: Profile,
    key: Vec<u8>,
    salt: Vec<u8>,
}

impl std::fmt::Debug for Keying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keying({}, key hidden)", self.profile.name())
    }
}

impl Keying {
    /// Key ‖ salt from its base64 text (`source` names where it came from, for errors; the key
    /// itself is never printed).
    pub fn from_base64(text: &str, profile: Profile, source: &str) -> Result<Keying, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("{source}: not base64 ({e})"))?;
        let p = profile.library();
        let (key_len, salt_len) = (p.key_len(), p.salt_len());
        if bytes.len() != key_len + salt_len {
            return Err(format!(
                "{source}: {} bytes; {} takes a {key_len}-byte key and a {salt_len}-byte salt \
                 ({} bytes; make one with `head -c {} /dev/urandom | base64`)",
                bytes.len(),
                profile.name(),
                key_len + salt_len,
                key_len + salt_len
            ));
        }
        Ok(Keying {
            profile,
            key: bytes[..key_len].to_vec(),
            salt: bytes[key_len..].to_vec(),
        })
    }

    /// Flow `flow`'s SSRCs, derived from the key: SHA-256 of a label, the key, the salt and the
    /// flow's index, its first four bytes as the base (`Ssrcs` convention: media = base, RTX =
    /// base | 1, FEC = base | 2). Both ends know them without signalling; a third party without
    /// the key cannot predict them (RFC 3550 §8 wants SSRCs random; rtcc has no signalling to
    /// announce random ones, so they are keyed: judgment call). Plain RTP keeps the scenario's.
    pub fn ssrcs(&self, flow: u32) -> Ssrcs {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(b"rtcc ssrc")
            .chain_update(&self.key)
            .chain_update(&self.salt)
            .chain_update(flow.to_be_bytes())
            .finalize();
        // The low two bits carry the stream; 0 and 1 (the receiver's own SSRC) are never a
        // stream's.
        let base = (u32::from_be_bytes(digest[..4].try_into().unwrap()) & !3).max(4);
        Ssrcs {
            media: base,
            rtx: base | 1,
            fec: base | 2,
        }
    }

    /// The key of `--srtp-key-file FILE`, else of [`KEY_ENV`], else none (plain RTP).
    pub fn load(file: Option<&Path>, profile: Profile) -> Result<Option<Keying>, String> {
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--srtp-key-file {}: {e}", path.display()))?;
            let source = format!("--srtp-key-file {}", path.display());
            return Keying::from_base64(&text, profile, &source).map(Some);
        }
        match std::env::var(KEY_ENV) {
            Ok(text) => Keying::from_base64(&text, profile, KEY_ENV).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{KEY_ENV}: not base64 text")),
        }
    }
}

/// Why an incoming datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Shorter than a header and a tag.
    Short,
    /// An SSRC this end does not expect.
    UnknownSsrc,
    /// It does not authenticate, or it is a replay.
    Unauthenticated,
}

/// The replay list of one stream (RFC 3711 §3.3.2): the newest authenticated index and which
/// of the [`REPLAY_WINDOW`] before it have been seen.
#[derive(Debug, Default)]
pub struct ReplayWindow {
    newest: Option<u64>,
    seen: [u64; (REPLAY_WINDOW / 64) as usize],
}

impl ReplayWindow {
    /// Record `index` (authenticated) if it is new; false for a replay or one too old.
    pub fn accept(&mut self, index: u64) -> bool {
        let newest = *self.newest.get_or_insert(index);
        if index > newest {
            let shift = index - newest;
            for _ in 0..shift.min(REPLAY_WINDOW) {
                // Shift the window one index at a time (at most its size): simple and bounded.
                let mut carry = 0;
                for w in self.seen.iter_mut().rev() {
                    let out = *w >> 63;
                    *w = (*w << 1) | carry;
                    carry = out;
                }
            }
            self.newest = Some(index);
        }
        let age = self.newest.unwrap() - index.min(self.newest.unwrap());
        if age >= REPLAY_WINDOW {
            return false;
        }
        let (word, bit) = ((age / 64) as usize, age % 64);
        let fresh = self.seen[word] & (1 << bit) == 0;
        self.seen[word] |= 1 << bit;
        fresh
    }
}

/// One end's SRTP state: a context for what it sends and one for what it receives, and the
/// replay list of each stream it expects.
pub struct Srtp {
    profile: Profile,
    outgoing: Context,
    incoming: Context,
    /// SSRCs incoming datagrams may carry, with their sequence-number unwrapper (RTP) and
    /// replay lists (RTP, RTCP).
    expected: Vec<(u32, SeqUnwrapper, ReplayWindow, ReplayWindow)>,
}

impl Srtp {
    /// An end that accepts datagrams of the SSRCs `expected` only.
    pub fn new(keying: &Keying, expected: Vec<u32>) -> Result<Srtp, String> {
        // The library's replay protection stays off (module documentation): ours.
        let context = || {
            Context::new(
                &keying.key,
                &keying.salt,
                keying.profile.library(),
                None,
                None,
            )
            .map_err(|e| format!("SRTP: {e}"))
        };
        Ok(Srtp {
            profile: keying.profile,
            outgoing: context()?,
            incoming: context()?,
            expected: expected
                .into_iter()
                .map(|ssrc| {
                    (
                        ssrc,
                        SeqUnwrapper::new(),
                        ReplayWindow::default(),
                        ReplayWindow::default(),
                    )
                })
                .collect(),
        })
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Encrypt and authenticate an outgoing RTP packet or RTCP compound (`rtcp`), into `out`.
    pub fn protect(
        &mut self,
        datagram: &[u8],
        rtcp: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let sealed = if rtcp {
            self.outgoing.encrypt_rtcp(datagram)
        } else {
            self.outgoing.encrypt_rtp(datagram)
        }
        .map_err(|e| {
            format!(
                "SRTP: cannot protect a datagram of {} bytes: {e}",
                datagram.len()
            )
        })?;
        out.clear();
        out.extend_from_slice(&sealed);
        Ok(())
    }

    /// The plaintext of an incoming RTP packet or RTCP compound (`rtcp`, from its second byte:
    /// RFC 5761 §4), into `out`.
    pub fn unprotect(
        &mut self,
        datagram: &[u8],
        rtcp: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        let (min, ssrc_at) = if rtcp {
            (8 + self.profile.rtcp_overhead(), 4)
        } else {
            (12 + self.profile.rtp_overhead(), 8)
        };
        if datagram.len() < min {
            return Err(Refused::Short);
        }
        let ssrc = u32::from_be_bytes(datagram[ssrc_at..ssrc_at + 4].try_into().unwrap());
        let Some(stream) = self.expected.iter().position(|e| e.0 == ssrc) else {
            return Err(Refused::UnknownSsrc);
        };
        // The E flag and 31-bit SRTCP index: before the tag (AES-CM), or last (AEAD).
        let index_at = match self.profile {
            Profile::AesCm128HmacSha1_80 => datagram.len() - self.profile.rtp_overhead() - 4,
            Profile::AeadAes128Gcm => datagram.len() - 4,
        };
        if rtcp && datagram[index_at] & 0x80 == 0 {
            // An SRTCP packet that says it is not encrypted: webrtc-srtp 0.17 returns those
            // without checking their tag (RFC 3711 §3.4 makes authentication mandatory).
            // rtcc always encrypts SRTCP, as libsrtp does by default: refused.
            return Err(Refused::Unauthenticated);
        }
        let plain = if rtcp {
            self.incoming.decrypt_rtcp(datagram)
        } else {
            self.incoming.decrypt_rtp(datagram)
        }
        .map_err(|_| Refused::Unauthenticated)?;
        // Authentic: now the replay list (RFC 3711 §3.3: updated after authentication).
        let (_, unwrapper, rtp_list, rtcp_list) = &mut self.expected[stream];
        let fresh = if rtcp {
            let word = u32::from_be_bytes(datagram[index_at..index_at + 4].try_into().unwrap());
            rtcp_list.accept((word & 0x7FFF_FFFF) as u64)
        } else {
            rtp_list.accept(unwrapper.unwrap(u16::from_be_bytes([datagram[2], datagram[3]])))
        };
        if !fresh {
            return Err(Refused::Unauthenticated);
        }
        out.clear();
        out.extend_from_slice(&plain);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcc_core::wire::rtcp::{Pli, RtcpPacket};
    use rtcc_core::wire::rtp::RtpHeader;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd"; // bytes 0..30
    const GCM_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw=="; // bytes 0..28

    fn rtp(seq: u16, ssrc: u32) -> Vec<u8> {
        let mut b = Vec::new();
        RtpHeader {
            payload_type: 96,
            sequence: seq,
            ssrc,
            transport_seq: Some(seq),
            ..RtpHeader::default()
        }
        .encode(&mut b);
        b.resize(200, 0);
        b
    }

    fn pair(profile: Profile) -> (Srtp, Srtp) {
        let key = if profile == Profile::AeadAes128Gcm {
            GCM_KEY
        } else {
            KEY
        };
        let k = Keying::from_base64(key, profile, "test").unwrap();
        (
            Srtp::new(&k, vec![1]).unwrap(),
            Srtp::new(&k, vec![7]).unwrap(),
        )
    }

    #[test]
    fn both_profiles_round_trip_rtp_and_rtcp_and_refuse_tampering_and_replays() {
        for profile in [Profile::AesCm128HmacSha1_80, Profile::AeadAes128Gcm] {
            let (mut sender, mut receiver) = pair(profile);
            let (mut sealed, mut plain) = (Vec::new(), Vec::new());
            let packet = rtp(5, 7);
            sender.protect(&packet, false, &mut sealed).unwrap();
            assert_eq!(sealed.len(), packet.len() + profile.rtp_overhead());
            assert_ne!(&sealed[12..200], &packet[12..], "the payload is encrypted");
            receiver.unprotect(&sealed, false, &mut plain).unwrap();
            assert_eq!(plain, packet);
            assert_eq!(
                receiver.unprotect(&sealed, false, &mut plain),
                Err(Refused::Unauthenticated),
                "{profile:?}: a replay is refused"
            );
            let mut tampered = Vec::new();
            sender.protect(&rtp(6, 7), false, &mut tampered).unwrap();
            tampered[20] ^= 1;
            assert_eq!(
                receiver.unprotect(&tampered, false, &mut plain),
                Err(Refused::Unauthenticated),
                "{profile:?}: one flipped bit"
            );
            let mut pli = Vec::new();
            RtcpPacket::Pli(Pli {
                sender_ssrc: 1,
                media_ssrc: 7,
            })
            .encode(&mut pli)
            .unwrap();
            receiver.protect(&pli, true, &mut sealed).unwrap();
            assert_eq!(sealed.len(), pli.len() + profile.rtcp_overhead());
            sender.unprotect(&sealed, true, &mut plain).unwrap();
            assert_eq!(plain, pli);
        }
    }

    #[test]
    fn a_forged_packet_does_not_move_the_replay_window_of_a_stream() {
        // The first packet the receiver sees on a stream is forged, with a sequence number far
        // from the real one: the real packets that follow must still be accepted.
        let (mut sender, mut receiver) = pair(Profile::AesCm128HmacSha1_80);
        let mut plain = Vec::new();
        let mut forged = rtp(20_000, 7);
        forged.extend_from_slice(&[0; 10]);
        assert_eq!(
            receiver.unprotect(&forged, false, &mut plain),
            Err(Refused::Unauthenticated)
        );
        let mut sealed = Vec::new();
        for seq in 1..2000u16 {
            sender.protect(&rtp(seq, 7), false, &mut sealed).unwrap();
            receiver.unprotect(&sealed, false, &mut plain).unwrap();
        }
    }

    #[test]
    fn an_srtcp_packet_that_claims_to_be_unencrypted_is_refused() {
        // A plaintext PLI with an SRTCP index word whose E flag is 0 and a tag of zeros: the
        // library would hand it back as authentic.
        let (_, mut receiver) = pair(Profile::AesCm128HmacSha1_80);
        let mut forged = Vec::new();
        RtcpPacket::Pli(Pli {
            sender_ssrc: 7,
            media_ssrc: 7,
        })
        .encode(&mut forged)
        .unwrap();
        forged.extend_from_slice(&[0, 0, 0, 1]);
        forged.extend_from_slice(&[0; 10]);
        let mut plain = Vec::new();
        assert_eq!(
            receiver.unprotect(&forged, true, &mut plain),
            Err(Refused::Unauthenticated)
        );
    }

    #[test]
    fn the_replay_window_accepts_each_index_once_and_late_ones_within_its_size() {
        let mut w = ReplayWindow::default();
        assert!(w.accept(100));
        assert!(!w.accept(100), "a replay");
        assert!(w.accept(99), "late, within the window");
        assert!(w.accept(100 + REPLAY_WINDOW));
        assert!(!w.accept(100), "now too old");
        assert!(w.accept(101), "inside the window still");
        assert!(!w.accept(101));
        assert!(w.accept(5_000_000), "a far jump forward");
        assert!(!w.accept(5_000_000));
    }

    #[test]
    fn unknown_ssrcs_and_short_datagrams_are_refused_before_the_library_sees_them() {
        let (mut sender, mut receiver) = pair(Profile::AesCm128HmacSha1_80);
        let mut sealed = Vec::new();
        sender.protect(&rtp(1, 99), false, &mut sealed).unwrap();
        let mut plain = Vec::new();
        assert_eq!(
            receiver.unprotect(&sealed, false, &mut plain),
            Err(Refused::UnknownSsrc)
        );
        for len in 0..30 {
            let junk = vec![0x80; len];
            assert!(receiver.unprotect(&junk, false, &mut plain).is_err());
            assert!(sender.unprotect(&junk, true, &mut plain).is_err());
        }
    }

    #[test]
    fn ssrcs_come_from_the_key_and_the_flow() {
        let k = pair_keying();
        let other = Keying::from_base64(
            "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",
            Profile::AesCm128HmacSha1_80,
            "test",
        )
        .unwrap();
        assert_eq!(k.ssrcs(0), k.ssrcs(0), "both ends derive the same");
        assert_ne!(k.ssrcs(0).media, k.ssrcs(1).media, "flows differ");
        assert_ne!(k.ssrcs(0).media, other.ssrcs(0).media, "keys differ");
        assert_ne!(k.ssrcs(0), Ssrcs::for_flow(0), "not the scenario's");
        let s = k.ssrcs(3);
        assert_eq!((s.rtx, s.fec), (s.media | 1, s.media | 2));
        assert!(s.media >= 4 && s.media & 3 == 0);
    }

    #[test]
    fn keys_of_the_wrong_size_or_not_base64_are_refused_with_their_source() {
        let e = Keying::from_base64("AAEC", Profile::AesCm128HmacSha1_80, "k.txt").unwrap_err();
        assert!(e.contains("k.txt") && e.contains("30 bytes"), "{e}");
        let e =
            Keying::from_base64("not base64!", Profile::AesCm128HmacSha1_80, "env").unwrap_err();
        assert!(e.contains("not base64"), "{e}");
        assert!(
            !format!("{:?}", pair_keying()).contains("AAEC"),
            "keys are not printed"
        );
        assert!(Profile::parse("aes_cm_128_hmac_sha1_80").is_ok());
        assert!(Profile::parse("NULL")
            .unwrap_err()
            .contains("AEAD_AES_128_GCM"));
    }

    fn pair_keying() -> Keying {
        Keying::from_base64(KEY, Profile::AesCm128HmacSha1_80, "test").unwrap()
    }
}
