/**
 * A real HEIC file made in the test: an HEVC (H.265) Main profile still image, wrapped in a HEIF
 * container with the `heic` brand, as a phone writes it. sharp's prebuilt build cannot encode
 * HEVC, and no encoder ships with the project's dependencies, so this writes the bitstream itself.
 * It stays small by coding every 32x32 block in PCM mode (H.265 7.3.8.7: the samples stored as
 * they are), which needs only three syntax elements per block through CABAC: `part_mode`,
 * `pcm_flag` and `end_of_slice_segment_flag`. Any HEVC decoder reads it; the tests decode it with
 * heic-decode (libheif with libde265), the same path the import takes.
 *
 * References: ITU-T H.265 (7.3 syntax, 9.3 CABAC, 9.3.4.3 arithmetic coding, Table 9-46
 * rangeTabLps), ISO/IEC 23008-12 (HEIF boxes), ISO/IEC 14496-15 8.3.3 (hvcC).
 */

/** Writes bits most significant first; exp-Golomb codes of H.265 9.2. */
class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private used = 0;

  bit(value: number): void {
    this.current = (this.current << 1) | (value & 1);
    this.used += 1;
    if (this.used === 8) {
      this.bytes.push(this.current);
      this.current = 0;
      this.used = 0;
    }
  }

  u(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i -= 1) this.bit(Math.floor(value / 2 ** i) % 2);
  }

  ue(value: number): void {
    const code = value + 1;
    const length = Math.floor(Math.log2(code)) + 1;
    this.u(0, length - 1);
    this.u(code, length);
  }

  se(value: number): void {
    this.ue(value <= 0 ? -2 * value : 2 * value - 1);
  }

  get aligned(): boolean {
    return this.used === 0;
  }

  /** Zero bits up to the next byte (pcm_alignment_zero_bit, alignment_bit_equal_to_zero). */
  alignZero(): void {
    while (this.used !== 0) this.bit(0);
  }

  /** rbsp_trailing_bits() and byte_alignment(): a one, then zeros to the byte. */
  trailing(): void {
    this.bit(1);
    this.alignZero();
  }

  bytesOut(): Buffer {
    if (this.used !== 0) throw new Error('not byte aligned');
    return Buffer.from(this.bytes);
  }
}

/** Table 9-46: rangeTabLps[pStateIdx][qRangeIdx]. */
const RANGE_TAB_LPS: readonly (readonly number[])[] = [
  [128, 176, 208, 240], [128, 167, 197, 227], [128, 158, 187, 216], [123, 150, 178, 205], [116, 142, 169, 195],
  [111, 135, 160, 185], [105, 128, 152, 175], [100, 122, 144, 166], [95, 116, 137, 158], [90, 110, 130, 150],
  [85, 104, 123, 142], [81, 99, 117, 135], [77, 94, 111, 128], [73, 89, 105, 122], [69, 85, 100, 116],
  [66, 80, 95, 110], [62, 76, 90, 104], [59, 72, 86, 99], [56, 69, 81, 94], [53, 65, 77, 89],
  [51, 62, 73, 85], [48, 59, 69, 80], [46, 56, 66, 76], [43, 53, 63, 72], [41, 50, 59, 69],
  [39, 48, 56, 65], [37, 45, 54, 62], [35, 43, 51, 59], [33, 41, 48, 56], [32, 39, 46, 53],
  [30, 37, 43, 50], [29, 35, 41, 48], [27, 33, 39, 45], [26, 31, 37, 43], [24, 30, 35, 41],
  [23, 28, 33, 39], [22, 27, 32, 37], [21, 26, 30, 35], [20, 24, 29, 33], [19, 23, 27, 31],
  [18, 22, 26, 30], [17, 21, 25, 28], [16, 20, 23, 27], [15, 19, 22, 25], [14, 18, 21, 24],
  [14, 17, 20, 23], [13, 16, 19, 22], [12, 15, 18, 21], [12, 14, 17, 20], [11, 14, 16, 19],
  [11, 13, 15, 18], [10, 12, 15, 17], [10, 12, 14, 16], [9, 11, 13, 15], [9, 11, 12, 14],
  [8, 10, 12, 14], [8, 9, 11, 13], [7, 9, 11, 12], [7, 9, 10, 12], [7, 8, 10, 11],
  [6, 8, 9, 11], [6, 7, 9, 10], [6, 7, 8, 9], [2, 2, 2, 2],
];
/** Table 9-47: transIdxLps. */
const TRANS_IDX_LPS = [
  0, 0, 1, 2, 2, 4, 4, 5, 6, 7, 8, 9, 9, 11, 11, 12, 13, 13, 15, 15, 16, 16, 18, 18, 19, 19, 21, 21, 22, 22, 23, 24,
  24, 25, 26, 26, 27, 27, 28, 29, 29, 30, 30, 30, 31, 32, 32, 33, 33, 33, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 63,
];

interface Context {
  state: number;
  mps: number;
}

/** 9.3.2.2: a context variable from its initValue at the slice QP. */
function initContext(initValue: number, qp: number): Context {
  const m = (initValue >> 4) * 5 - 45;
  const n = ((initValue & 15) << 3) - 16;
  const pre = Math.min(126, Math.max(1, ((m * Math.min(51, Math.max(0, qp))) >> 4) + n));
  return pre <= 63 ? { state: 63 - pre, mps: 0 } : { state: pre - 64, mps: 1 };
}

/** The arithmetic encoder of 9.3.4 (low, range, outstanding bits), writing into a BitWriter. */
class CabacEncoder {
  private low = 0;
  private range = 510;
  private outstanding = 0;
  private firstBit = true;

  constructor(private readonly out: BitWriter) {}

  /** InitEncoder: at the start of slice data and after PCM samples (9.3.2.5). */
  reset(): void {
    this.low = 0;
    this.range = 510;
    this.outstanding = 0;
    this.firstBit = true;
  }

  private putBit(bit: number): void {
    if (this.firstBit) this.firstBit = false;
    else this.out.bit(bit);
    for (; this.outstanding > 0; this.outstanding -= 1) this.out.bit(1 - bit);
  }

  private renormalize(): void {
    while (this.range < 256) {
      if (this.low < 256) {
        this.putBit(0);
      } else if (this.low >= 512) {
        this.low -= 512;
        this.putBit(1);
      } else {
        this.low -= 256;
        this.outstanding += 1;
      }
      this.range <<= 1;
      this.low <<= 1;
    }
  }

  decision(ctx: Context, bin: number): void {
    const lps = RANGE_TAB_LPS[ctx.state]![(this.range >> 6) & 3]!;
    this.range -= lps;
    if (bin !== ctx.mps) {
      this.low += this.range;
      this.range = lps;
      if (ctx.state === 0) ctx.mps = 1 - ctx.mps;
      ctx.state = TRANS_IDX_LPS[ctx.state]!;
    } else {
      ctx.state = Math.min(ctx.state + 1, 62);
    }
    this.renormalize();
  }

  /** EncodeTerminate; a 1 ends the arithmetic code with EncodeFlush, whose last bit is a 1. */
  terminate(bin: number): void {
    this.range -= 2;
    if (!bin) {
      this.renormalize();
      return;
    }
    this.low += this.range;
    this.range = 2;
    this.renormalize();
    this.putBit((this.low >> 9) & 1);
    this.out.u(((this.low >> 7) & 3) | 1, 2);
  }
}

/** A NAL unit: the two-byte header, then the RBSP with emulation prevention bytes (7.4.2). */
function nal(type: number, rbsp: Buffer): Buffer {
  const out: number[] = [type << 1, 1];
  let zeros = 0;
  for (const byte of rbsp) {
    if (zeros >= 2 && byte <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(byte);
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

const PROFILE_COMPATIBILITY = 0x6000_0000; // Main, and Main 10 decoders read it too
const LEVEL_IDC = 93; // level 3.1: up to 983,040 luma samples

/** profile_tier_level(1, 0): Main profile, progressive, frame only (7.3.3). */
function profileTierLevel(w: BitWriter): void {
  w.u(0, 2); // general_profile_space
  w.u(0, 1); // general_tier_flag
  w.u(1, 5); // general_profile_idc: Main
  w.u(PROFILE_COMPATIBILITY, 32);
  w.u(1, 1); // progressive_source
  w.u(0, 1); // interlaced_source
  w.u(0, 1); // non_packed_constraint
  w.u(1, 1); // frame_only_constraint
  w.u(0, 44); // reserved and inbld bits
  w.u(LEVEL_IDC, 8);
}

const CTB = 32; // CTB, minimum coding block and PCM block are all 32x32: one CU per CTU

function vps(): Buffer {
  const w = new BitWriter();
  w.u(0, 4); // vps_video_parameter_set_id
  w.u(1, 1); // vps_base_layer_internal_flag
  w.u(1, 1); // vps_base_layer_available_flag
  w.u(0, 6); // vps_max_layers_minus1
  w.u(0, 3); // vps_max_sub_layers_minus1
  w.u(1, 1); // vps_temporal_id_nesting_flag
  w.u(0xffff, 16);
  profileTierLevel(w);
  w.u(1, 1); // vps_sub_layer_ordering_info_present_flag
  w.ue(0); // vps_max_dec_pic_buffering_minus1
  w.ue(0); // vps_max_num_reorder_pics
  w.ue(0); // vps_max_latency_increase_plus1
  w.u(0, 6); // vps_max_layer_id
  w.ue(0); // vps_num_layer_sets_minus1
  w.u(0, 1); // vps_timing_info_present_flag
  w.u(0, 1); // vps_extension_flag
  w.trailing();
  return nal(32, w.bytesOut());
}

function sps(width: number, height: number, codedWidth: number, codedHeight: number): Buffer {
  const w = new BitWriter();
  w.u(0, 4); // sps_video_parameter_set_id
  w.u(0, 3); // sps_max_sub_layers_minus1
  w.u(1, 1); // sps_temporal_id_nesting_flag
  profileTierLevel(w);
  w.ue(0); // sps_seq_parameter_set_id
  w.ue(1); // chroma_format_idc: 4:2:0
  w.ue(codedWidth);
  w.ue(codedHeight);
  const crop = codedWidth !== width || codedHeight !== height;
  w.u(crop ? 1 : 0, 1); // conformance_window_flag
  if (crop) {
    // In chroma sample units (SubWidthC = SubHeightC = 2 for 4:2:0).
    w.ue(0);
    w.ue((codedWidth - width) / 2);
    w.ue(0);
    w.ue((codedHeight - height) / 2);
  }
  w.ue(0); // bit_depth_luma_minus8
  w.ue(0); // bit_depth_chroma_minus8
  w.ue(0); // log2_max_pic_order_cnt_lsb_minus4
  w.u(1, 1); // sps_sub_layer_ordering_info_present_flag
  w.ue(0); // sps_max_dec_pic_buffering_minus1
  w.ue(0); // sps_max_num_reorder_pics
  w.ue(0); // sps_max_latency_increase_plus1
  w.ue(2); // log2_min_luma_coding_block_size_minus3: 32
  w.ue(0); // log2_diff_max_min_luma_coding_block_size: CTB 32
  w.ue(0); // log2_min_luma_transform_block_size_minus2: 4
  w.ue(3); // log2_diff_max_min_luma_transform_block_size: 32
  w.ue(0); // max_transform_hierarchy_depth_inter
  w.ue(0); // max_transform_hierarchy_depth_intra
  w.u(0, 1); // scaling_list_enabled_flag
  w.u(0, 1); // amp_enabled_flag
  w.u(0, 1); // sample_adaptive_offset_enabled_flag
  w.u(1, 1); // pcm_enabled_flag
  w.u(7, 4); // pcm_sample_bit_depth_luma_minus1: 8 bits
  w.u(7, 4); // pcm_sample_bit_depth_chroma_minus1: 8 bits
  w.ue(2); // log2_min_pcm_luma_coding_block_size_minus3: 32
  w.ue(0); // log2_diff_max_min_pcm_luma_coding_block_size
  w.u(1, 1); // pcm_loop_filter_disabled_flag
  w.ue(0); // num_short_term_ref_pic_sets
  w.u(0, 1); // long_term_ref_pics_present_flag
  w.u(0, 1); // sps_temporal_mvp_enabled_flag
  w.u(0, 1); // strong_intra_smoothing_enabled_flag
  w.u(0, 1); // vui_parameters_present_flag
  w.u(0, 1); // sps_extension_present_flag
  w.trailing();
  return nal(33, w.bytesOut());
}

function pps(): Buffer {
  const w = new BitWriter();
  w.ue(0); // pps_pic_parameter_set_id
  w.ue(0); // pps_seq_parameter_set_id
  w.u(0, 1); // dependent_slice_segments_enabled_flag
  w.u(0, 1); // output_flag_present_flag
  w.u(0, 3); // num_extra_slice_header_bits
  w.u(0, 1); // sign_data_hiding_enabled_flag
  w.u(0, 1); // cabac_init_present_flag
  w.ue(0); // num_ref_idx_l0_default_active_minus1
  w.ue(0); // num_ref_idx_l1_default_active_minus1
  w.se(0); // init_qp_minus26
  w.u(0, 1); // constrained_intra_pred_flag
  w.u(0, 1); // transform_skip_enabled_flag
  w.u(0, 1); // cu_qp_delta_enabled_flag
  w.se(0); // pps_cb_qp_offset
  w.se(0); // pps_cr_qp_offset
  w.u(0, 1); // pps_slice_chroma_qp_offsets_present_flag
  w.u(0, 1); // weighted_pred_flag
  w.u(0, 1); // weighted_bipred_flag
  w.u(0, 1); // transquant_bypass_enabled_flag
  w.u(0, 1); // tiles_enabled_flag
  w.u(0, 1); // entropy_coding_sync_enabled_flag
  w.u(0, 1); // pps_loop_filter_across_slices_enabled_flag
  w.u(1, 1); // deblocking_filter_control_present_flag
  w.u(0, 1); // deblocking_filter_override_enabled_flag
  w.u(1, 1); // pps_deblocking_filter_disabled_flag
  w.u(0, 1); // pps_scaling_list_data_present_flag
  w.u(0, 1); // lists_modification_present_flag
  w.ue(0); // log2_parallel_merge_level_minus2
  w.u(0, 1); // slice_segment_header_extension_present_flag
  w.u(0, 1); // pps_extension_present_flag
  w.trailing();
  return nal(34, w.bytesOut());
}

interface Planes {
  y: Uint8Array;
  cb: Uint8Array;
  cr: Uint8Array;
  /** Luma width (chroma planes are half of it each way). */
  stride: number;
}

/** One IDR slice of the whole picture: every CTU one 32x32 intra CU in PCM mode. */
function slice(planes: Planes, codedWidth: number, codedHeight: number): Buffer {
  const w = new BitWriter();
  w.u(1, 1); // first_slice_segment_in_pic_flag
  w.u(0, 1); // no_output_of_prior_pics_flag (an IRAP picture)
  w.ue(0); // slice_pic_parameter_set_id
  w.ue(2); // slice_type: I
  w.se(0); // slice_qp_delta: SliceQpY = 26
  w.trailing(); // byte_alignment()
  const cabac = new CabacEncoder(w);
  // Table 9-11: part_mode's initValue for I slices is 184.
  const partMode = initContext(184, 26);
  const columns = codedWidth / CTB;
  const rows = codedHeight / CTB;
  for (let row = 0; row < rows; row += 1) {
    for (let column = 0; column < columns; column += 1) {
      cabac.decision(partMode, 1); // part_mode: PART_2Nx2N (coded as log2CbSize == MinCbLog2SizeY)
      cabac.terminate(1); // pcm_flag
      w.alignZero(); // pcm_alignment_zero_bit
      for (let y = 0; y < CTB; y += 1) for (let x = 0; x < CTB; x += 1) w.u(planes.y[(row * CTB + y) * planes.stride + column * CTB + x]!, 8);
      const half = CTB / 2;
      const cstride = planes.stride / 2;
      for (const plane of [planes.cb, planes.cr]) {
        for (let y = 0; y < half; y += 1) for (let x = 0; x < half; x += 1) w.u(plane[(row * half + y) * cstride + column * half + x]!, 8);
      }
      cabac.reset(); // 9.3.2.5: the arithmetic engine starts again after the PCM samples
      cabac.terminate(row === rows - 1 && column === columns - 1 ? 1 : 0); // end_of_slice_segment_flag
    }
  }
  // The flush after the last end_of_slice_segment_flag wrote rbsp_stop_one_bit; align with zeros.
  w.alignZero();
  return nal(19, w.bytesOut()); // IDR_W_RADL
}

/** The picture in Y'CbCr 4:2:0, full range, BT.601 matrix (what the colr box says). */
function toPlanes(width: number, height: number, codedWidth: number, codedHeight: number, rgb: (x: number, y: number) => [number, number, number]): Planes {
  const y = new Uint8Array(codedWidth * codedHeight);
  const cb = new Uint8Array((codedWidth / 2) * (codedHeight / 2));
  const cr = new Uint8Array(cb.length);
  const clamp = (v: number): number => Math.max(0, Math.min(255, Math.round(v)));
  // Outside the picture (the part the conformance window crops), the edge pixels are repeated.
  const at = (x: number, yy: number): [number, number, number] => rgb(Math.min(x, width - 1), Math.min(yy, height - 1));
  for (let j = 0; j < codedHeight; j += 1) {
    for (let i = 0; i < codedWidth; i += 1) {
      const [r, g, b] = at(i, j);
      y[j * codedWidth + i] = clamp(0.299 * r + 0.587 * g + 0.114 * b);
    }
  }
  for (let j = 0; j < codedHeight / 2; j += 1) {
    for (let i = 0; i < codedWidth / 2; i += 1) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]] as const) {
        const [pr, pg, pb] = at(2 * i + dx, 2 * j + dy);
        r += pr / 4;
        g += pg / 4;
        b += pb / 4;
      }
      cb[j * (codedWidth / 2) + i] = clamp(128 - 0.168736 * r - 0.331264 * g + 0.5 * b);
      cr[j * (codedWidth / 2) + i] = clamp(128 + 0.5 * r - 0.418688 * g - 0.081312 * b);
    }
  }
  return { y, cb, cr, stride: codedWidth };
}

// --- HEIF container (ISO/IEC 23008-12) ---

const u8 = (v: number): Buffer => Buffer.from([v]);
const u16 = (v: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
};
const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v);
  return b;
};
const fourcc = (s: string): Buffer => Buffer.from(s, 'latin1');

function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([u32(8 + body.length), fourcc(type), body]);
}

function fullBox(type: string, version: number, flags: number, ...parts: Buffer[]): Buffer {
  return box(type, u8(version), Buffer.from([(flags >> 16) & 0xff, (flags >> 8) & 0xff, flags & 0xff]), ...parts);
}

/** HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 8.3.3.1) with the VPS, SPS and PPS. */
function hvcC(parameterSets: { type: number; unit: Buffer }[]): Buffer {
  const arrays = parameterSets.map(({ type, unit }) => Buffer.concat([u8(0x80 | type), u16(1), u16(unit.length), unit]));
  return box(
    'hvcC',
    u8(1), // configurationVersion
    u8(0x01), // profile space 0, tier 0, profile Main
    u32(PROFILE_COMPATIBILITY),
    Buffer.from([0x90, 0, 0, 0, 0, 0]), // progressive, frame only
    u8(LEVEL_IDC),
    u16(0xf000), // min_spatial_segmentation_idc 0
    u8(0xfc), // parallelismType 0
    u8(0xfc | 1), // chroma_format_idc 4:2:0
    u8(0xf8), // bit_depth_luma_minus8 0
    u8(0xf8), // bit_depth_chroma_minus8 0
    u16(0), // avgFrameRate
    u8(0x0f), // one temporal layer, nested, NAL lengths in 4 bytes
    u8(arrays.length),
    ...arrays,
  );
}

/** The file: ftyp, meta (one `hvc1` item, its properties), mdat (the slice, length-prefixed). */
function heifFile(width: number, height: number, parameterSets: { type: number; unit: Buffer }[], sliceUnit: Buffer): Buffer {
  const ftyp = box('ftyp', fourcc('heic'), u32(0), fourcc('mif1'), fourcc('heic'));
  const data = Buffer.concat([u32(sliceUnit.length), sliceUnit]);
  const metaFor = (dataOffset: number): Buffer =>
    fullBox(
      'meta', 0, 0,
      fullBox('hdlr', 0, 0, u32(0), fourcc('pict'), u32(0), u32(0), u32(0), u8(0)),
      fullBox('pitm', 0, 0, u16(1)),
      // offset_size 4, length_size 4, base_offset_size 0; one item, one extent.
      fullBox('iloc', 0, 0, u8(0x44), u8(0x00), u16(1), u16(1), u16(0), u16(1), u32(dataOffset), u32(data.length)),
      fullBox('iinf', 0, 0, u16(1), fullBox('infe', 2, 0, u16(1), u16(0), fourcc('hvc1'), u8(0))),
      box(
        'iprp',
        box(
          'ipco',
          hvcC(parameterSets),
          fullBox('ispe', 0, 0, u32(width), u32(height)),
          // nclx: BT.709 primaries, sRGB transfer, BT.601 matrix, full range (what toPlanes wrote).
          box('colr', fourcc('nclx'), u16(1), u16(13), u16(6), u8(0x80)),
        ),
        // Item 1: hvcC (essential), ispe, colr.
        fullBox('ipma', 0, 0, u32(1), u16(1), u8(3), u8(0x81), u8(0x02), u8(0x03)),
      ),
    );
  // The meta box's size does not depend on the offset it holds: measure it once, then write it.
  const offset = ftyp.length + metaFor(0).length + 8;
  return Buffer.concat([ftyp, metaFor(offset), box('mdat', data)]);
}

/**
 * A HEIC image of `width` x `height` (even numbers) of one colour, or of `pixels(x, y)`.
 */
export function heic(width: number, height: number, colour: [number, number, number] | ((x: number, y: number) => [number, number, number])): Buffer {
  if (width % 2 || height % 2 || width < 2 || height < 2) throw new Error('width and height must be even (4:2:0 chroma)');
  const codedWidth = Math.ceil(width / CTB) * CTB;
  const codedHeight = Math.ceil(height / CTB) * CTB;
  const pixels = typeof colour === 'function' ? colour : () => colour;
  const planes = toPlanes(width, height, codedWidth, codedHeight, pixels);
  const parameterSets = [
    { type: 32, unit: vps() },
    { type: 33, unit: sps(width, height, codedWidth, codedHeight) },
    { type: 34, unit: pps() },
  ];
  return heifFile(width, height, parameterSets, slice(planes, codedWidth, codedHeight));
}
