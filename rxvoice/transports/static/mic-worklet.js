// The microphone, as 20 ms chunks of 16 kHz 16-bit PCM (resampled linearly from the context's rate).
class MicProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / 16000; // input samples per output sample
    this.pos = 0;
    this.prev = 0;
    this.buf = new Int16Array(320);
    this.n = 0;
    this.sum = 0;
  }

  process(inputs) {
    const input = inputs[0];
    const ch = input && input[0];
    if (!ch) return true;
    for (let i = 0; i < ch.length; i++) {
      const x = ch[i];
      while (this.pos <= 1) { // emit every output sample that falls between prev and x
        const s = Math.max(-1, Math.min(1, this.prev + (x - this.prev) * this.pos));
        this.sum += s * s;
        this.buf[this.n++] = s < 0 ? s * 32768 : s * 32767;
        if (this.n === this.buf.length) {
          this.port.postMessage({ pcm: this.buf.buffer, rms: Math.sqrt(this.sum / this.n) }, [this.buf.buffer]);
          this.buf = new Int16Array(320);
          this.n = 0;
          this.sum = 0;
        }
        this.pos += this.step;
      }
      this.pos -= 1;
      this.prev = x;
    }
    return true;
  }
}

registerProcessor("rxvoice-mic", MicProcessor);
