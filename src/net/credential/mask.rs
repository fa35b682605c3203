//! The secret taken back out of what an origin answers: a response body streamed through
//! [`Masked`] has each form the proxy sent the secret in replaced by the same form of the
//! placeholder, even when a form is split across the body's chunks.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use memchr::memmem;

/// The pairs (secret form, placeholder form) to mask, longest first, and the bytes held
/// back because they might begin a form the next chunk completes.
pub(crate) struct Masker {
    forms: Vec<(Vec<u8>, Vec<u8>)>,
    carry: Vec<u8>,
}

impl Masker {
    pub(crate) fn new(mut forms: Vec<(Vec<u8>, Vec<u8>)>) -> Masker {
        forms.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        Masker {
            forms,
            carry: Vec::new(),
        }
    }

    /// What of `carry + chunk` is safe to pass on: masked, minus a tail shorter than the
    /// longest form (kept for the next chunk, which may complete a form it begins).
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.carry.extend_from_slice(chunk);
        let mut buf = std::mem::take(&mut self.carry);
        for (secret, placeholder) in &self.forms {
            if memmem::find(&buf, secret).is_some() {
                buf = super::replace_all(&buf, secret, placeholder);
            }
        }
        let keep = self
            .forms
            .first()
            .map_or(0, |(s, _)| s.len().saturating_sub(1));
        let cut = buf.len().saturating_sub(keep);
        self.carry = buf.split_off(cut);
        buf
    }

    /// Every form in one whole value (a trailer's), masked; None: none in it.
    pub(crate) fn mask_whole(&self, value: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for (secret, placeholder) in &self.forms {
            let cur = out.as_deref().unwrap_or(value);
            if memmem::find(cur, secret).is_some() {
                out = Some(super::replace_all(cur, secret, placeholder));
            }
        }
        out
    }

    /// The held-back tail at the end of the body (too short to hold a whole form).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.carry)
    }
}

/// A response body with the secret masked in its data frames.
pub(crate) struct Masked<B> {
    inner: B,
    masker: Masker,
    /// Trailers (or the end) seen while the held-back tail was still unsent.
    pending: Option<Option<Frame<Bytes>>>,
}

impl<B> Masked<B> {
    pub(crate) fn new(inner: B, masker: Masker) -> Masked<B> {
        Masked {
            inner,
            masker,
            pending: None,
        }
    }
}

impl<B> Body for Masked<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        if let Some(pending) = self.pending.take() {
            return Poll::Ready(pending.map(Ok));
        }
        loop {
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let out = self.masker.feed(&data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                    Err(trailers) => {
                        let trailers = self.mask_trailers(trailers);
                        return Poll::Ready(Some(Ok(self.flush(Some(trailers)))));
                    }
                },
                Poll::Ready(None) => {
                    let tail = self.masker.finish();
                    if tail.is_empty() {
                        return Poll::Ready(None);
                    }
                    self.pending = Some(None);
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))));
                }
            }
        }
    }
}

impl<B> Masked<B> {
    /// Trailers (sent on to a client that asked with `TE: trailers`) masked like the
    /// body: each value; a value that no longer fits a header is dropped.
    fn mask_trailers(&self, frame: Frame<Bytes>) -> Frame<Bytes> {
        let trailers = match frame.into_trailers() {
            Ok(t) => t,
            Err(other) => return other,
        };
        let mut out = http::HeaderMap::with_capacity(trailers.len());
        for (name, value) in trailers.iter() {
            match self.masker.mask_whole(value.as_bytes()) {
                None => {
                    out.append(name.clone(), value.clone());
                }
                Some(masked) => {
                    if let Ok(v) = http::HeaderValue::from_bytes(&masked) {
                        out.append(name.clone(), v);
                    }
                }
            }
        }
        Frame::trailers(out)
    }

    /// The held-back tail before `next` (trailers), which waits in `pending`.
    fn flush(&mut self, next: Option<Frame<Bytes>>) -> Frame<Bytes> {
        let tail = self.masker.finish();
        if tail.is_empty() {
            return next.expect("trailers");
        }
        self.pending = Some(next);
        Frame::data(Bytes::from(tail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_split_across_chunks_is_masked() {
        let mut m = Masker::new(vec![(b"s3cret".to_vec(), b"PLACEHOLDER".to_vec())]);
        let mut out = Vec::new();
        for chunk in [&b"echo: s3"[..], b"c", b"ret and s3cre", b"t"] {
            out.extend(m.feed(chunk));
        }
        out.extend(m.finish());
        assert_eq!(out, b"echo: PLACEHOLDER and PLACEHOLDER");
    }

    /// A body of the frames given, in order.
    struct Frames(std::collections::VecDeque<Frame<Bytes>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    #[tokio::test]
    async fn trailers_are_masked_too() {
        use http_body_util::BodyExt;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-echo", http::HeaderValue::from_static("Bearer s3cret"));
        let body = Frames(
            [
                Frame::data(Bytes::from_static(b"body s3cret")),
                Frame::trailers(trailers),
            ]
            .into(),
        );
        let masker = Masker::new(vec![(b"s3cret".to_vec(), b"PLACEHOLDER".to_vec())]);
        let collected = Masked::new(body, masker).collect().await.unwrap();
        let trailers = collected.trailers().cloned().unwrap();
        assert_eq!(trailers["x-echo"], "Bearer PLACEHOLDER");
        assert_eq!(&collected.to_bytes()[..], b"body PLACEHOLDER");
    }
}
