//! SETTINGS (RFC 9113 §6.5): the parameters a peer announces, checked as §6.5.2 asks.

use bytes::{BufMut, BytesMut};

use super::{DEFAULT_MAX_FRAME_SIZE, FrameError, MAX_WINDOW, Reason, kind, put_head};

/// Setting identifiers (§6.5.2, and RFC 8441's ENABLE_CONNECT_PROTOCOL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    HeaderTableSize = 0x1,
    EnablePush = 0x2,
    MaxConcurrentStreams = 0x3,
    InitialWindowSize = 0x4,
    MaxFrameSize = 0x5,
    MaxHeaderListSize = 0x6,
}

/// The settings one SETTINGS frame carries; `None` for those it leaves as they were. Of a
/// setting given twice, the last counts (§6.5.3: processed in order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    pub(crate) header_table_size: Option<u32>,
    pub(crate) enable_push: Option<bool>,
    pub(crate) max_concurrent_streams: Option<u32>,
    pub(crate) initial_window_size: Option<u32>,
    pub(crate) max_frame_size: Option<u32>,
    pub(crate) max_header_list_size: Option<u32>,
}

/// The largest value SETTINGS_MAX_FRAME_SIZE may take (§6.5.2).
const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;

impl Settings {
    pub(super) fn parse(payload: &[u8]) -> Result<Settings, FrameError> {
        if !payload.len().is_multiple_of(6) {
            return Err(FrameError::Connection(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS not a multiple of 6 bytes",
            ));
        }
        let mut settings = Settings::default();
        for entry in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            match id {
                0x1 => settings.header_table_size = Some(value),
                0x2 => {
                    if value > 1 {
                        return Err(FrameError::Connection(
                            Reason::PROTOCOL_ERROR,
                            "SETTINGS_ENABLE_PUSH neither 0 nor 1",
                        ));
                    }
                    settings.enable_push = Some(value == 1);
                }
                0x3 => settings.max_concurrent_streams = Some(value),
                0x4 => {
                    if value > MAX_WINDOW {
                        return Err(FrameError::Connection(
                            Reason::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    settings.initial_window_size = Some(value);
                }
                0x5 => {
                    if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) {
                        return Err(FrameError::Connection(
                            Reason::PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of range",
                        ));
                    }
                    settings.max_frame_size = Some(value);
                }
                0x6 => settings.max_header_list_size = Some(value),
                // Unknown settings are ignored (§6.5.2).
                _ => {}
            }
        }
        Ok(settings)
    }

    /// Writes these settings as a SETTINGS frame.
    pub(crate) fn put(&self, dst: &mut BytesMut) {
        let entries = [
            (Setting::HeaderTableSize, self.header_table_size),
            (Setting::EnablePush, self.enable_push.map(u32::from)),
            (Setting::MaxConcurrentStreams, self.max_concurrent_streams),
            (Setting::InitialWindowSize, self.initial_window_size),
            (Setting::MaxFrameSize, self.max_frame_size),
            (Setting::MaxHeaderListSize, self.max_header_list_size),
        ];
        let count = entries.iter().filter(|(_, value)| value.is_some()).count();
        put_head(dst, 6 * count, kind::SETTINGS, 0, 0);
        for (id, value) in entries {
            if let Some(value) = value {
                dst.put_u16(id as u16);
                dst.put_u32(value);
            }
        }
    }
}
