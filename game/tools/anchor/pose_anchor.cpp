// The bench's C++ anchor: the pose pipeline of `scuffle bench` (the compiled kernel
// pose_plan) written as plain scalar C++, so the kernel's speed is measured against a
// native build of the same maths in the same run (scuffle.game.tools.bench, "anchor").
//
// Per human: two clips sampled (the key in force carried by its slope, bones 1-33
// normalised, bone 0's turn scaled by the rate, a left-out bone the reference rotation,
// the tags into the y words' lowest bit), the two poses blended (Pose_BlendPartial's tag
// rules, a shortest-path slerp per bone, a normalised lerp above |dot| 0.9995), then
// local-to-model down the parent table (34 bones). float32 values as the kernel keeps
// them; the angles from libm in double (the kernel's come from scuffle.anim.detmath's
// polynomials, within 3e-7), so poses agree to a tolerance, not bit for bit.
//
// Usage: pose_anchor INPUT OUTPUT REPEATS
//   INPUT  the tables and humans the bench wrote (layout in read_input below);
//   OUTPUT the model-space positions (H, 34, 3) then rotations (H, 34, 4), float32;
//   prints one line: the median CPU nanoseconds per human over REPEATS passes (the
//   thread's CPU clock: a machine shared with other work does not inflate it).
// Build: g++ -O2 -ffp-contract=off -o pose_anchor pose_anchor.cpp (the bench does it).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kBones = 34;
constexpr int kTags = kBones + 2;
constexpr int kNoVelocity = 1;
constexpr int kNoTurn = 2;

struct Bank {
    std::vector<int64_t> row0, rows, ftab, parents;
    std::vector<float> kval, kslope, kstart, ref_rot, offsets;
    std::vector<uint8_t> ktag, animated;
    int64_t slots = 0, sent_vel = 0, sent_bone = 0;
    float bind_height = 0.0f;
};

struct Humans {
    std::vector<int64_t> clip_a, clip_b, flags;
    std::vector<float> t_a, t_b, rate, w;
};

struct Pose {
    float vel[3], root[3], rot[kBones][4];
    bool tag[kTags];
};

template <typename T>
bool get(FILE* f, std::vector<T>& v, size_t n) {
    v.resize(n);
    return n == 0 || std::fread(v.data(), sizeof(T), n, f) == n;
}

template <typename T>
bool get1(FILE* f, T& x) { return std::fread(&x, sizeof(T), 1, f) == 1; }

// The input, little-endian: "SCPA", int64 clips, ftab rows, slots, keys, humans; then
// row0, rows (int64 per clip); ftab (int64, rows x slots); kval, kslope (float32, keys x 4);
// kstart (float32 per key); ktag (uint8 per key); sent_vel, sent_bone (int64); animated
// (uint8 per slot); the reference rotations (float32, 34 x 4); the bind height (float32);
// parents (int64, 34); offsets (float32, 34 x 3); per human clip_a, clip_b, flags (int64),
// t_a, t_b, rate, w (float32), each a column.
bool read_input(const char* path, Bank& b, Humans& h) {
    FILE* f = std::fopen(path, "rb");
    if (!f) return false;
    char magic[4];
    int64_t clips = 0, frows = 0, keys = 0, n = 0;
    bool ok = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "SCPA", 4) == 0 && get1(f, clips) &&
              get1(f, frows) && get1(f, b.slots) && get1(f, keys) && get1(f, n) && b.slots == kTags &&
              get(f, b.row0, clips) && get(f, b.rows, clips) && get(f, b.ftab, frows * b.slots) &&
              get(f, b.kval, keys * 4) && get(f, b.kslope, keys * 4) && get(f, b.kstart, keys) &&
              get(f, b.ktag, keys) && get1(f, b.sent_vel) && get1(f, b.sent_bone) && get(f, b.animated, b.slots) &&
              get(f, b.ref_rot, kBones * 4) && get1(f, b.bind_height) && get(f, b.parents, kBones) &&
              get(f, b.offsets, kBones * 3) && get(f, h.clip_a, n) && get(f, h.clip_b, n) && get(f, h.flags, n) &&
              get(f, h.t_a, n) && get(f, h.t_b, n) && get(f, h.rate, n) && get(f, h.w, n);
    std::fclose(f);
    return ok;
}

// float32 a x b rounded toward zero (the PS2 FPU's multiply).
float mul_tz(float a, float b) {
    double r = static_cast<double>(a) * static_cast<double>(b);
    float x = static_cast<float>(r);
    if (std::fabs(static_cast<double>(x)) > std::fabs(r)) x = std::nextafter(x, 0.0f);
    return x;
}

void set_tag_bits(Pose& p) {
    auto put = [](float& v, bool t) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        u = (u & ~1u) | (t ? 1u : 0u);
        std::memcpy(&v, &u, 4);
    };
    put(p.vel[1], p.tag[0]);
    put(p.root[1], p.tag[1]);
    for (int b = 0; b < kBones; ++b) put(p.rot[b][1], p.tag[2 + b]);
}

void sample(const Bank& bk, int64_t clip, float time, float rate, int64_t flags, Pose& p) {
    const float x = mul_tz(time, 30.0f);
    double fr = std::ceil(static_cast<double>(x) - 0.5);
    if (fr < 0.0) fr = 0.0;
    int64_t fi = static_cast<int64_t>(fr);
    const int64_t last = bk.rows[clip] - 1;
    if (fi > last) fi = last;
    const int64_t* row = &bk.ftab[(bk.row0[clip] + fi) * bk.slots];
    const float* kval = bk.kval.data();
    const float* kslope = bk.kslope.data();
    // the root velocity, scaled by the rate
    uint64_t k = static_cast<uint64_t>((flags & kNoVelocity) ? bk.sent_vel : row[0]);
    p.tag[0] = bk.ktag[k];
    float dx = x - bk.kstart[k];
    for (int c = 0; c < 3; ++c) p.vel[c] = (kslope[k * 4 + c] * dx + kval[k * 4 + c]) * rate;
    // the root translation, plus the bind height
    k = static_cast<uint64_t>(row[1]);
    p.tag[1] = bk.ktag[k];
    dx = x - bk.kstart[k];
    for (int c = 0; c < 3; ++c) p.root[c] = kslope[k * 4 + c] * dx + kval[k * 4 + c];
    p.root[2] += bk.bind_height;
    // bone 0: the turn, scaled by the rate
    k = static_cast<uint64_t>((flags & kNoTurn) ? bk.sent_bone : row[2]);
    p.tag[2] = bk.ktag[k];
    dx = x - bk.kstart[k];
    float q[4];
    for (int c = 0; c < 4; ++c) q[c] = kslope[k * 4 + c] * dx + kval[k * 4 + c];
    if (!(rate == 1.0f || std::fabs(1.0f - q[3]) <= 5e-7f)) {
        const double r = std::min(std::max(static_cast<double>(rate), 0.0), 1.0);
        const double w = std::min(std::max(static_cast<double>(q[3]), -1.0), 1.0);
        const double half = std::acos(w);
        double sh = std::sqrt(1.0 - w * w);
        if (sh == 0.0) sh = 1.0;
        const float kk = static_cast<float>(std::sin(r * half) / sh);
        q[0] *= kk;
        q[1] *= kk;
        q[2] *= kk;
        q[3] = static_cast<float>(std::cos(r * half));
    }
    std::memcpy(p.rot[0], q, sizeof q);
    // bones 1-33: the key in force, normalised; a left-out bone the reference rotation
    for (int64_t slot = 3; slot < bk.slots; ++slot) {
        k = static_cast<uint64_t>(row[slot]);
        const bool tag = bk.ktag[k];
        p.tag[slot] = tag;
        const int b = static_cast<int>(slot - 2);
        if (!bk.animated[slot] || tag) {
            std::memcpy(p.rot[b], &bk.ref_rot[b * 4], 4 * sizeof(float));
            continue;
        }
        dx = x - bk.kstart[k];
        float v[4];
        for (int c = 0; c < 4; ++c) v[c] = kslope[k * 4 + c] * dx + kval[k * 4 + c];
        float n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
        if (n == 0.0f) n = 1.0f;
        const float inv = 1.0f / n;
        for (int c = 0; c < 4; ++c) p.rot[b][c] = v[c] * inv;
    }
    set_tag_bits(p);
}

double cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void slerp(const float* a, const float* b, float t, float* o) {
    t = std::min(std::max(t, 0.0f), 1.0f);
    const float dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    const float d = std::min(std::fabs(dot), 1.0f);
    float wa, wb;
    if (d > 0.9995f) {
        wa = 1.0f - t;
        wb = dot >= 0 ? t : -t;
        float v[4];
        for (int c = 0; c < 4; ++c) v[c] = a[c] * wa + b[c] * wb;
        const float n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
        if (n == 0.0f) {
            o[0] = o[1] = o[2] = 0.0f;
            o[3] = 1.0f;
        } else {
            for (int c = 0; c < 4; ++c) o[c] = v[c] / n;
        }
        return;
    }
    const double theta = std::acos(static_cast<double>(d));
    const double inv = 1.0 / std::sqrt(1.0 - static_cast<double>(d) * d);
    wa = static_cast<float>(std::sin((1.0 - t) * theta) * inv);
    wb = static_cast<float>(std::sin(t * theta) * inv);
    if (dot < 0) wb = -wb;
    for (int c = 0; c < 4; ++c) o[c] = a[c] * wa + b[c] * wb;
}

// Pose_BlendPartial of lo and up by w, every bone (no subtree mask): a tagged side gives way.
void blend(const Pose& lo, const Pose& up, float w, Pose& o) {
    const bool lt = lo.tag[0], ut = up.tag[0];
    for (int c = 0; c < 3; ++c) o.vel[c] = ut ? lo.vel[c] : (lt ? up.vel[c] : lo.vel[c] + (up.vel[c] - lo.vel[c]) * w);
    const bool lt2 = lo.tag[2], ut2 = up.tag[2];
    if (ut2) std::memcpy(o.rot[0], lo.rot[0], sizeof o.rot[0]);
    else if (lt2) std::memcpy(o.rot[0], up.rot[0], sizeof o.rot[0]);
    else slerp(lo.rot[0], up.rot[0], w, o.rot[0]);
    o.tag[0] = lt && ut;
    o.tag[2] = lt2 && ut2;
    const bool both = lo.tag[1] && up.tag[1];
    for (int c = 0; c < 3; ++c) o.root[c] = both ? lo.root[c] : lo.root[c] + (up.root[c] - lo.root[c]) * w;
    o.tag[1] = both;
    for (int b = 1; b < kBones; ++b) {
        const bool bt = lo.tag[2 + b] && up.tag[2 + b];
        if (bt) std::memcpy(o.rot[b], lo.rot[b], sizeof o.rot[b]);
        else slerp(lo.rot[b], up.rot[b], w, o.rot[b]);
        o.tag[2 + b] = bt;
    }
    set_tag_bits(o);
}

// Local-to-model: entry 0 the motion channels, bone 1 absolute, the rest down the parents.
void emit(const Bank& bk, const Pose& p, float* pos, float* mrot) {
    for (int c = 0; c < 3; ++c) pos[c] = p.tag[0] ? 0.0f : p.vel[c];
    if (p.tag[2]) {
        mrot[0] = mrot[1] = mrot[2] = 0.0f;
        mrot[3] = 1.0f;
    } else {
        std::memcpy(mrot, p.rot[0], 4 * sizeof(float));
    }
    std::memcpy(pos + 3, p.root, 3 * sizeof(float));
    std::memcpy(mrot + 4, p.rot[1], 4 * sizeof(float));
    for (int b = 2; b < kBones; ++b) {
        const float bx = p.rot[b][0], by = p.rot[b][1], bz = p.rot[b][2], bw = p.rot[b][3];
        const float vx = bk.offsets[b * 3], vy = bk.offsets[b * 3 + 1], vz = bk.offsets[b * 3 + 2];
        const int64_t par = bk.parents[b];
        const float* a = mrot + par * 4;
        const float* pp = pos + par * 3;
        const float ax = a[0], ay = a[1], az = a[2], aw = a[3];
        float* m = mrot + b * 4;
        m[0] = aw * bx + ax * bw + ay * bz - az * by;
        m[1] = aw * by - ax * bz + ay * bw + az * bx;
        m[2] = aw * bz + ax * by - ay * bx + az * bw;
        m[3] = aw * bw - ax * bx - ay * by - az * bz;
        const float cx = ay * vz - az * vy + aw * vx;
        const float cy = az * vx - ax * vz + aw * vy;
        const float cz = ax * vy - ay * vx + aw * vz;
        float* o = pos + b * 3;
        o[0] = (ay * cz - az * cy) * 2.0f + vx + pp[0];
        o[1] = (az * cx - ax * cz) * 2.0f + vy + pp[1];
        o[2] = (ax * cy - ay * cx) * 2.0f + vz + pp[2];
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: pose_anchor INPUT OUTPUT REPEATS\n");
        return 2;
    }
    Bank bk;
    Humans h;
    if (!read_input(argv[1], bk, h)) {
        std::fprintf(stderr, "pose_anchor: %s: not a pose anchor input\n", argv[1]);
        return 2;
    }
    const long repeats = std::max(1L, std::strtol(argv[3], nullptr, 10));
    const size_t n = h.clip_a.size();
    std::vector<float> pos(n * kBones * 3), mrot(n * kBones * 4);
    std::vector<double> ns;
    Pose a, b, o;
    for (long r = 0; r < repeats; ++r) {
        const double t0 = cpu_ns();
        for (size_t i = 0; i < n; ++i) {
            sample(bk, h.clip_a[i], h.t_a[i], h.rate[i], h.flags[i], a);
            sample(bk, h.clip_b[i], h.t_b[i], h.rate[i], h.flags[i], b);
            blend(a, b, h.w[i], o);
            emit(bk, o, &pos[i * kBones * 3], &mrot[i * kBones * 4]);
        }
        ns.push_back((cpu_ns() - t0) / static_cast<double>(n ? n : 1));
    }
    std::sort(ns.begin(), ns.end());
    FILE* f = std::fopen(argv[2], "wb");
    if (!f || std::fwrite(pos.data(), sizeof(float), pos.size(), f) != pos.size() ||
        std::fwrite(mrot.data(), sizeof(float), mrot.size(), f) != mrot.size()) {
        std::fprintf(stderr, "pose_anchor: cannot write %s\n", argv[2]);
        return 2;
    }
    std::fclose(f);
    std::printf("%.3f\n", ns[ns.size() / 2]);
    return 0;
}
