/* Unit tests of the export's building blocks: the protobuf wire encoder
 * against the examples of the protobuf encoding guide
 * (protobuf.dev/programming-guides/encoding), pprof's simplifyFunc against
 * the cases of its own prune.go, and gzip round trips through zlib. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <libiberty/demangle.h>

#include "ap_export.h"

static int failures;

static void expect_bytes(const char *what, const struct ap_buf *b, const uint8_t *want,
			 size_t n)
{
	if (b->len == n && !memcmp(b->buf, want, n))
		return;
	failures++;
	fprintf(stderr, "FAIL %s:\n  got ", what);
	for (size_t i = 0; i < b->len; i++)
		fprintf(stderr, " %02x", (uint8_t)b->buf[i]);
	fprintf(stderr, "\n  want");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", want[i]);
	fprintf(stderr, "\n");
}

static void test_encoding_guide(void)
{
	struct ap_buf b = AP_BUF_INIT;

	/* "message Test1 { optional int32 a = 1; }" with a = 150 */
	ap_pb_uint(&b, 1, 150);
	expect_bytes("Test1 a=150", &b, (const uint8_t[]){ 0x08, 0x96, 0x01 }, 3);

	/* "message Test2 { optional string b = 2; }" with b = "testing" */
	ap_buf_reset(&b);
	ap_pb_bytes(&b, 2, "testing", 7);
	expect_bytes("Test2 b=testing", &b,
		     (const uint8_t[]){ 0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67 }, 9);

	/* "message Test3 { optional Test1 c = 3; }" with c.a = 150 */
	ap_buf_reset(&b);
	size_t m = ap_pb_begin(&b, 3);
	ap_pb_uint(&b, 1, 150);
	ap_pb_end(&b, m);
	expect_bytes("Test3 c.a=150", &b, (const uint8_t[]){ 0x1a, 0x03, 0x08, 0x96, 0x01 }, 5);

	/* "message Test5 { repeated int32 f = 6 [packed = true]; }" with
	 * 3, 270, 86942 */
	ap_buf_reset(&b);
	ap_pb_packed(&b, 6, (const uint64_t[]){ 3, 270, 86942 }, 3);
	expect_bytes("Test5 packed", &b,
		     (const uint8_t[]){ 0x32, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05 }, 8);

	/* proto3: zero scalars and empty repeated fields are left out; an
	 * empty string is written (pprof's string_table[0]). */
	ap_buf_reset(&b);
	ap_pb_uint(&b, 1, 0);
	ap_pb_bool(&b, 7, false);
	ap_pb_packed(&b, 1, NULL, 0);
	ap_pb_bytes(&b, 6, "", 0);
	expect_bytes("zero values", &b, (const uint8_t[]){ 0x32, 0x00 }, 2);

	/* int64 -1: ten bytes of two's complement; bool true: 1 */
	ap_buf_reset(&b);
	ap_pb_int(&b, 2, -1);
	ap_pb_bool(&b, 10, true);
	expect_bytes("int64 -1, bool", &b,
		     (const uint8_t[]){ 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0x01, 0x50, 0x01 }, 13);

	/* A nested message of 300 bytes: its length takes two bytes
	 * (300 = 0xac 0x02), inserted before the body. Nested twice. */
	ap_buf_reset(&b);
	size_t outer = ap_pb_begin(&b, 4);
	size_t inner = ap_pb_begin(&b, 1);
	char body[297];
	memset(body, 'x', sizeof(body));
	ap_pb_bytes(&b, 2, body, sizeof(body));	/* 1 + 2 + 297 = 300 bytes */
	ap_pb_end(&b, inner);
	ap_pb_end(&b, outer);
	uint8_t want[306];
	size_t n = 0;
	want[n++] = 0x22, want[n++] = 0xaf, want[n++] = 0x02;	/* 4: 303 */
	want[n++] = 0x0a, want[n++] = 0xac, want[n++] = 0x02;	/* 1: 300 */
	want[n++] = 0x12, want[n++] = 0xa9, want[n++] = 0x02;	/* 2: 297 */
	memset(want + n, 'x', 297);
	n += 297;
	expect_bytes("nested 300-byte message", &b, want, n);
	if (b.buf[b.len] != 0) {
		failures++;
		fprintf(stderr, "FAIL nested: buffer not NUL-terminated\n");
	}
	ap_buf_release(&b);
}

static void test_simplify(void)
{
	/* What pprof's prune.go does to names before matching drop_frames. */
	static const char *const cases[][2] = {
		{ "foo", "foo" },
		{ "foo(int, char*)", "foo" },
		{ ".foo", "foo" },
		{ "ns::Cls::method(int) const", "ns::Cls::method" },
		{ "(anonymous namespace)::helper(long)", "(anonymous namespace)::helper" },
		{ "Cls::operator()(int)", "Cls::operator()" },
		{ "std::function<void ()>::operator()() const", "std::function<void " },
		{ "(anonymous namespace)::Lambda::operator()", "(anonymous namespace)::Lambda::operator()" },
		{ "", "" },
	};
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < AP_ARRAY_SIZE(cases); i++) {
		ap_buf_reset(&b);
		ap_export_pprof_simplify(cases[i][0], &b);
		if (strcmp(b.buf, cases[i][1])) {
			failures++;
			fprintf(stderr, "FAIL simplify '%s': got '%s', want '%s'\n", cases[i][0],
				b.buf, cases[i][1]);
		}
	}
	ap_buf_release(&b);
}

/* Rust names: demangled by libiberty (what the symbolizer calls), then
 * shortened to the path without generic arguments, the same from the
 * legacy and the v0 mangling (symbols of tests/symbolize/rust.py's
 * program, built by Debian's rustc 1.63). */
static void test_rust_name(void)
{
	static const char *const cases[][3] = {
		{ "_ZN7rustapp5store8Registry3add17h5b438894a46868afE",
		  "rustapp::store::Registry::add", "rustapp::store::Registry::add" },
		{ "_RNvMNtCs6ynzyF37QjM_7rustapp5storeNtB2_8Registry3add",
		  "<rustapp::store::Registry>::add", "rustapp::store::Registry::add" },
		{ "_RNvNtCs6ynzyF37QjM_7rustapp5store11make_buffer", "rustapp::store::make_buffer",
		  "rustapp::store::make_buffer" },
		{ "_ZN7rustapp5store11make_buffer17h7845b24577a4b6e4E",
		  "rustapp::store::make_buffer", "rustapp::store::make_buffer" },
		{ "_RINvMs5_NtCsaSWUN35JBpm_9hashbrown3rawINtB6_8RawTableTyjEE14reserve_rehashNCINvNt"
		  "B8_3map11make_hasheryyjNtNtNtNtCsdyIG5SqMl5y_3std11collections4hash3map11RandomSta"
		  "teE0ECs6ynzyF37QjM_7rustapp",
		  "<hashbrown::raw::RawTable<(u64, usize)>>::reserve_rehash::<hashbrown::map::make_"
		  "hasher<u64, u64, usize, std::collections::hash::map::RandomState>::{closure#0}>",
		  "hashbrown::raw::RawTable::reserve_rehash" },
		{ "_RINvNtCs6IL9ONYDOZW_4core3ptr13drop_in_placeINtNtCsihNoVIYWwLU_5alloc3vec3VecNtNt"
		  "BL_6string6StringEECs6ynzyF37QjM_7rustapp",
		  "core::ptr::drop_in_place::<alloc::vec::Vec<alloc::string::String>>",
		  "core::ptr::drop_in_place" },
		{ "_ZN104_$LT$core..iter..sources..from_fn..FromFn$LT$F$GT$$u20$as$u20$core..iter..tr"
		  "aits..iterator..Iterator$GT$4next17h5029af7e7bac568fE",
		  "<core::iter::sources::from_fn::FromFn<F> as core::iter::traits::iterator::Iterat"
		  "or>::next",
		  "<core::iter::sources::from_fn::FromFn as core::iter::traits::iterator::Iterator>"
		  "::next" },
		{ "_ZN3std2io5impls74_$LT$impl$u20$std..io..Write$u20$for$u20$alloc..vec..Vec$LT$u8$C"
		  "$A$GT$$GT$5flush17hbfb1351caeda02efE",
		  "std::io::impls::<impl std::io::Write for alloc::vec::Vec<u8,A>>::flush",
		  "std::io::impls::<impl std::io::Write for alloc::vec::Vec>::flush" },
	};
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < AP_ARRAY_SIZE(cases); i++) {
		char *d = rust_demangle(cases[i][0], DMGL_PARAMS | DMGL_ANSI);
		if (!d || strcmp(d, cases[i][1])) {
			failures++;
			fprintf(stderr, "FAIL rust_demangle '%s': got '%s', want '%s'\n", cases[i][0],
				d ? d : "(null)", cases[i][1]);
		}
		free(d);
		ap_buf_reset(&b);
		ap_sym_short_name(cases[i][1], AP_SYM_RUST, &b);
		if (strcmp(b.buf, cases[i][2])) {
			failures++;
			fprintf(stderr, "FAIL rust short name '%s': got '%s', want '%s'\n",
				cases[i][1], b.buf, cases[i][2]);
		}
	}
	ap_buf_release(&b);
}

static void test_pprof_name(void)
{
	/* {mangled, as __cxa_demangle (c++filt) prints it, what Go's pprof
	 * shows: demangle.Filter(mangled, NoParams, NoTemplateParams) run
	 * by Go 1.19's vendored github.com/ianlancetaylor/demangle} */
	static const char *const cases[][3] = {
		{ "_ZN3geo6detail10make_pointIdEEPNS_5PointIT_EES3_",
		  "geo::Point<double>* geo::detail::make_point<double>(double)",
		  "geo::detail::make_point" },
		{ "_Znwm", "operator new(unsigned long)", "operator new" },
		{ "_ZNSt6vectorIN3geo5PointIfEESaIS2_EE17_M_realloc_insertIJS2_EEEvN9__gnu_cxx17__"
		  "normal_iteratorIPS2_S4_EEDpOT_",
		  "void std::vector<geo::Point<float>, std::allocator<geo::Point<float> > >::_M_"
		  "realloc_insert<geo::Point<float> >(__gnu_cxx::__normal_iterator<geo::Point<float>*"
		  ", std::vector<geo::Point<float>, std::allocator<geo::Point<float> > > >, "
		  "geo::Point<float>&&)",
		  "std::vector::_M_realloc_insert" },
		{ "_ZN5names10make_labelB5cxx11Ei", "names::make_label[abi:cxx11](int)",
		  "names::make_label[abi:cxx11]" },
		{ "_ZNK3foo3barEv", "foo::bar() const", "foo::bar" },
		{ "_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo()",
		  "(anonymous namespace)::foo" },
		{ "_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const",
		  "main::{lambda()#1}::operator()" },
		{ "_ZdlPvm", "operator delete(void*, unsigned long)", "operator delete" },
		{ "_ZN3fooltERKS_", "foo::operator<(foo const&)", "foo::operator<" },
		{ "_ZN3foocviEv", "foo::operator int()", "foo::operator int" },
		{ "_ZNSt8functionIFviEEclEi", "std::function<void (int)>::operator()(int)",
		  "std::function::operator()" },
		{ "_ZN3fooaSEOS_", "foo::operator=(foo&&)", "foo::operator=" },
		{ "_ZN1AIiE1fIdEEvT_", "void A<int>::f<double>(double)", "A::f" },
		{ "_ZN3foo3bazEv.cold", "foo::baz() [clone .cold]", "foo::baz" },
		{ "_ZnamRKSt9nothrow_t", "operator new[](unsigned long, std::nothrow_t const&)",
		  "operator new[]" },
		/* a template operator: c++filt writes a space before its
		 * arguments (found in clang++ 14's libLLVM) */
		{ "_ZN4llvmlsIRNS_18raw_string_ostreamEEERT_OS3_RKNS_10InlineCostE",
		  "llvm::raw_string_ostream& llvm::operator<< <llvm::raw_string_ostream&>"
		  "(llvm::raw_string_ostream&, llvm::InlineCost const&)",
		  "llvm::operator<<" },
		/* not demangled: as they are */
		{ "main", "main", "main" },
		{ "demo+0x12d8", "demo+0x12d8", "demo+0x12d8" },
	};
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < AP_ARRAY_SIZE(cases); i++) {
		ap_buf_reset(&b);
		ap_buf_addstr(&b, "x"); /* appends */
		ap_sym_short_name(cases[i][1],
				  strncmp(cases[i][0], "_Z", 2) ? AP_SYM_PLAIN : AP_SYM_CXX, &b);
		if (strcmp(b.buf + 1, cases[i][2]) || b.buf[0] != 'x') {
			failures++;
			fprintf(stderr, "FAIL pprof name '%s': got '%s', want '%s'\n", cases[i][1],
				b.buf, cases[i][2]);
		}
	}
	ap_buf_release(&b);
}

static void gunzip_check(const char *what, const void *data, size_t len, int level)
{
	struct ap_buf gz = AP_BUF_INIT;
	struct ap_error err;
	if (ap_export_gzip(data, len, level, &gz, &err)) {
		failures++;
		fprintf(stderr, "FAIL gzip %s: %s\n", what, err.msg);
		return;
	}
	/* RFC 1952: magic 1f 8b, method 8 (deflate) */
	if (gz.len < 18 || (uint8_t)gz.buf[0] != 0x1f || (uint8_t)gz.buf[1] != 0x8b ||
	    gz.buf[2] != 8) {
		failures++;
		fprintf(stderr, "FAIL gzip %s: no gzip header\n", what);
	}
	uint8_t *back = malloc(len + 1);
	z_stream z;
	memset(&z, 0, sizeof(z));
	inflateInit2(&z, 15 + 16);
	z.next_in = (Bytef *)gz.buf;
	z.avail_in = (uInt)gz.len;
	z.next_out = back;
	z.avail_out = (uInt)len + 1;
	int rc = inflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END || z.total_out != len || memcmp(back, data, len)) {
		failures++;
		fprintf(stderr, "FAIL gzip %s: round trip gave rc %d, %lu of %zu bytes\n", what,
			rc, z.total_out, len);
	}
	inflateEnd(&z);
	free(back);
	ap_buf_release(&gz);
}

static void test_gzip(void)
{
	gunzip_check("empty", "", 0, 6);
	const char *s = "alloc_objects alloc_space inuse_objects inuse_space";
	gunzip_check("text", s, strlen(s), 6);
	size_t n = 1 << 20;
	uint8_t *big = malloc(n);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		big[i] = (uint8_t)(x >> 24) & (i & 1 ? 0xff : 0x0f);
	}
	gunzip_check("1 MiB", big, n, 1);
	free(big);

	struct ap_buf gz = AP_BUF_INIT;
	struct ap_error err;
	if (ap_export_gzip("x", 1, 42, &gz, &err) == 0 || !strstr(err.msg, "gzip")) {
		failures++;
		fprintf(stderr, "FAIL gzip: level 42 accepted\n");
	}
	ap_buf_release(&gz);
}

int main(void)
{
	test_encoding_guide();
	test_simplify();
	test_pprof_name();
	test_rust_name();
	test_gzip();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
