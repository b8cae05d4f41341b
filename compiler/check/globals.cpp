// The names libtorch's and the C library's headers declare at global scope
// in a generated X.ops.cpp (functions `time`, `log`, `abs`, `printf`; types
// `FILE`, `tm`, `div_t`; namespaces `ska`, `pybind11`...): a generated
// namespace cannot take one (`namespace time {` is an error next to
// `::time()`, and reopening libtorch's namespaces is no better). Listed from
// clang's AST of `structop/registration.h` and `structop/convert.h` (names at
// global scope and in `extern "C"` blocks, without `__`), with Debian's
// torch 2.6 and glibc 2.41 and with pip's torch 2.13: both gave the same
// list. `std`, `at`, `c10`, `torch`, `caffe2` and `structop` are reported as
// taken (check/resolver.cpp).
#include "check/names.h"

namespace structop::model {

bool is_global_name(std::string_view name) {
  static const WordList kNames(R"(
CAFFE2_SEVERITY_PREFIX FILE FunctionTemplate PyObject a64l abort abs acos acosh acospi
aligned_alloc alloca arc4random arc4random_buf arc4random_uniform asctime asctime_r asin asinh
asinpi asprintf at_quick_exit atan atan2 atan2pi atanh atanpi atexit atof atoi atol atoll
basename bcmp bcopy bind_textdomain_codeset bindtextdomain blkcnt64_t blkcnt_t blksize_t bsearch
btowc bzero c10_complex_math caddr_t calloc canonicalize canonicalize_file_name cbrt ceil
clearenv clearerr clearerr_unlocked clock clock_adjtime clock_getcpuclockid clock_getres
clock_gettime clock_nanosleep clock_settime clock_t clockid_t clone comparison_fn_t
cookie_close_function_t cookie_io_functions_t cookie_read_function_t cookie_seek_function_t
cookie_write_function_t copysign cos cosh cospi cpu_set_t ctermid ctime ctime_r cuserid daddr_t
daylight dcgettext dcngettext definition dev_t dgettext difftime div div_t dngettext double_t
dprintf drand48 drand48_data drand48_r drem duplocale dysize ecvt ecvt_r erand48 erand48_r erf
erfc error_t exit exp exp10 exp10m1 exp2 exp2m1 explicit_bzero expm1 fabs fclose fcloseall fcvt
fcvt_r fd_mask fd_set fdim fdopen feof feof_unlocked ferror ferror_unlocked fflush
fflush_unlocked ffs ffsl ffsll fgetc fgetc_unlocked fgetpos fgetpos64 fgets fgets_unlocked
fgetwc fgetwc_unlocked fgetws fgetws_unlocked fileno fileno_unlocked finite float_t flockfile
floor fma fmax fmaximum fmaximum_mag fmaximum_mag_num fmaximum_num fmaxmag fmemopen fmin
fminimum fminimum_mag fminimum_mag_num fminimum_num fminmag fmod fopen fopen64 fopencookie
fpos64_t fpos_t fprintf fputc fputc_unlocked fputs fputs_unlocked fputwc fputwc_unlocked fputws
fputws_unlocked fread fread_unlocked free freelocale freopen freopen64 frexp fromfp fromfpx
fsblkcnt64_t fsblkcnt_t fscanf fseek fseeko fseeko64 fsetpos fsetpos64 fsfilcnt64_t fsfilcnt_t
fsid_t ftell ftello ftello64 ftrylockfile funlockfile fwide fwprintf fwrite fwrite_unlocked
fwscanf gamma gcvt getc getc_unlocked getchar getchar_unlocked getcpu getdate getdate_err
getdate_r getdelim getenv getline getloadavg getpayload getpt getsubopt gettext getw getwc
getwc_unlocked getwchar getwchar_unlocked gid_t gmtime gmtime_r grantpt hash hypot id_t ilogb
index initstate initstate_r ino64_t ino_t int16_t int32_t int64_t int8_t int_fast16_t
int_fast32_t int_fast64_t int_fast8_t int_least16_t int_least32_t int_least64_t int_least8_t
intmax_t intptr_t isalnum isalnum_l isalpha isalpha_l isascii isblank isblank_l iscanonical
iscntrl iscntrl_l isctype isdigit isdigit_l iseqsig isgraph isgraph_l islower islower_l isprint
isprint_l ispunct ispunct_l issignaling isspace isspace_l isupper isupper_l iswalnum iswalnum_l
iswalpha iswalpha_l iswblank iswblank_l iswcntrl iswcntrl_l iswctype iswctype_l iswdigit
iswdigit_l iswgraph iswgraph_l iswlower iswlower_l iswprint iswprint_l iswpunct iswpunct_l
iswspace iswspace_l iswupper iswupper_l iswxdigit iswxdigit_l isxdigit isxdigit_l iszero
itimerspec j0 j1 jn jrand48 jrand48_r key_t l64a labs lcong48 lcong48_r lconv ldexp ldiv ldiv_t
lgamma llabs lldiv lldiv_t llogb llrint llround locale_t localeconv localtime localtime_r loff_t
log log10 log10p1 log1p log2 log2p1 logb logp1 lrand48 lrand48_r lrint lround malloc max_align_t
mblen mbrlen mbrtowc mbsinit mbsnrtowcs mbsrtowcs mbstate_t mbstowcs mbtowc memccpy memchr
memcmp memcpy memfrob memmem memmove mempcpy memrchr memset mkdtemp mkostemp mkostemp64
mkostemps mkostemps64 mkstemp mkstemp64 mkstemps mkstemps64 mktemp mktime mode_t modf mrand48
mrand48_r nan nanosleep nearbyint newlocale nextafter nextdown nexttoward nextup ngettext
nlink_t nrand48 nrand48_r obstack obstack_printf obstack_vprintf off64_t off_t on_exit
open_memstream open_wmemstream operator pclose perror pid_t popen posix_memalign posix_openpt
pow printf program_invocation_name program_invocation_short_name pselect pthread_atfork
pthread_attr_destroy pthread_attr_getaffinity_np pthread_attr_getdetachstate
pthread_attr_getguardsize pthread_attr_getinheritsched pthread_attr_getschedparam
pthread_attr_getschedpolicy pthread_attr_getscope pthread_attr_getsigmask_np
pthread_attr_getstack pthread_attr_getstackaddr pthread_attr_getstacksize pthread_attr_init
pthread_attr_setaffinity_np pthread_attr_setdetachstate pthread_attr_setguardsize
pthread_attr_setinheritsched pthread_attr_setschedparam pthread_attr_setschedpolicy
pthread_attr_setscope pthread_attr_setsigmask_np pthread_attr_setstack pthread_attr_setstackaddr
pthread_attr_setstacksize pthread_attr_t pthread_barrier_destroy pthread_barrier_init
pthread_barrier_t pthread_barrier_wait pthread_barrierattr_destroy
pthread_barrierattr_getpshared pthread_barrierattr_init pthread_barrierattr_setpshared
pthread_barrierattr_t pthread_cancel pthread_clockjoin_np pthread_cond_broadcast
pthread_cond_clockwait pthread_cond_destroy pthread_cond_init pthread_cond_signal pthread_cond_t
pthread_cond_timedwait pthread_cond_wait pthread_condattr_destroy pthread_condattr_getclock
pthread_condattr_getpshared pthread_condattr_init pthread_condattr_setclock
pthread_condattr_setpshared pthread_condattr_t pthread_create pthread_detach pthread_equal
pthread_exit pthread_getaffinity_np pthread_getattr_default_np pthread_getattr_np
pthread_getconcurrency pthread_getcpuclockid pthread_getname_np pthread_getschedparam
pthread_getspecific pthread_join pthread_key_create pthread_key_delete pthread_key_t
pthread_mutex_clocklock pthread_mutex_consistent pthread_mutex_consistent_np
pthread_mutex_destroy pthread_mutex_getprioceiling pthread_mutex_init pthread_mutex_lock
pthread_mutex_setprioceiling pthread_mutex_t pthread_mutex_timedlock pthread_mutex_trylock
pthread_mutex_unlock pthread_mutexattr_destroy pthread_mutexattr_getprioceiling
pthread_mutexattr_getprotocol pthread_mutexattr_getpshared pthread_mutexattr_getrobust
pthread_mutexattr_getrobust_np pthread_mutexattr_gettype pthread_mutexattr_init
pthread_mutexattr_setprioceiling pthread_mutexattr_setprotocol pthread_mutexattr_setpshared
pthread_mutexattr_setrobust pthread_mutexattr_setrobust_np pthread_mutexattr_settype
pthread_mutexattr_t pthread_once pthread_once_t pthread_rwlock_clockrdlock
pthread_rwlock_clockwrlock pthread_rwlock_destroy pthread_rwlock_init pthread_rwlock_rdlock
pthread_rwlock_t pthread_rwlock_timedrdlock pthread_rwlock_timedwrlock pthread_rwlock_tryrdlock
pthread_rwlock_trywrlock pthread_rwlock_unlock pthread_rwlock_wrlock pthread_rwlockattr_destroy
pthread_rwlockattr_getkind_np pthread_rwlockattr_getpshared pthread_rwlockattr_init
pthread_rwlockattr_setkind_np pthread_rwlockattr_setpshared pthread_rwlockattr_t pthread_self
pthread_setaffinity_np pthread_setattr_default_np pthread_setcancelstate pthread_setcanceltype
pthread_setconcurrency pthread_setname_np pthread_setschedparam pthread_setschedprio
pthread_setspecific pthread_spin_destroy pthread_spin_init pthread_spin_lock
pthread_spin_trylock pthread_spin_unlock pthread_spinlock_t pthread_t pthread_testcancel
pthread_timedjoin_np pthread_tryjoin_np pthread_yield ptrdiff_t ptsname ptsname_r putc
putc_unlocked putchar putchar_unlocked putenv puts putw putwc putwc_unlocked putwchar
putwchar_unlocked pybind11 qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort qsort_r quad_t quick_exit
rand rand_r random random_data random_r rawmemchr realloc reallocarray realpath register_t
remainder remove remquo rename renameat renameat2 rewind rindex rint round roundeven rpmatch
scalb scalbln scalbn scanf sched_attr sched_get_priority_max sched_get_priority_min
sched_getaffinity sched_getattr sched_getcpu sched_getparam sched_getscheduler sched_param
sched_rr_get_interval sched_setaffinity sched_setattr sched_setparam sched_setscheduler
sched_yield secure_getenv seed48 seed48_r select setbuf setbuffer setenv setlinebuf setlocale
setns setpayload setpayloadsig setstate setstate_r setvbuf sigabbrev_np sigdescr_np sigevent
signgam significand sigset_t sin sincos sinh sinpi size_t ska ska_ordered snprintf sprintf sqrt
srand srand48 srand48_r srandom srandom_r sscanf ssize_t stderr stdin stdout stpcpy stpncpy
strcasecmp strcasecmp_l strcasestr strcat strchr strchrnul strcmp strcoll strcoll_l strcpy
strcspn strdup strerror strerror_l strerror_r strerrordesc_np strerrorname_np strfromd strfromf
strfromf128 strfromf32 strfromf32x strfromf64 strfromf64x strfroml strfry strftime strftime_l
strlcat strlcpy strlen strncasecmp strncasecmp_l strncat strncmp strncpy strndup strnlen strpbrk
strptime strptime_l strrchr strsep strsignal strspn strstr strtod strtod_l strtof strtof128
strtof128_l strtof32 strtof32_l strtof32x strtof32x_l strtof64 strtof64_l strtof64x strtof64x_l
strtof_l strtok strtok_r strtol strtol_l strtold strtold_l strtoll strtoll_l strtoq strtoul
strtoul_l strtoull strtoull_l strtouq strverscmp strxfrm strxfrm_l suseconds_t swprintf swscanf
system tan tanh tanpi tempnam textdomain tgamma time time_t timegm timelocal timer_create
timer_delete timer_getoverrun timer_gettime timer_settime timer_t timespec timespec_get
timespec_getres timeval timex timezone tm tmpfile tmpfile64 tmpnam tmpnam_r toascii tolower
tolower_l totalorder totalordermag toupper toupper_l towctrans towctrans_l towlower towlower_l
towupper towupper_l trunc tzname tzset u_char u_int u_int16_t u_int32_t u_int64_t u_int8_t
u_long u_quad_t u_short ufromfp ufromfpx uid_t uint uint16_t uint32_t uint64_t uint8_t
uint_fast16_t uint_fast32_t uint_fast64_t uint_fast8_t uint_least16_t uint_least32_t
uint_least64_t uint_least8_t uintmax_t uintptr_t ulong ungetc ungetwc unlockpt unsetenv unshare
useconds_t uselocale ushort va_list valloc vasprintf vdprintf vfprintf vfscanf vfwprintf
vfwscanf vprintf vscanf vsnprintf vsprintf vsscanf vswprintf vswscanf vwprintf vwscanf wcpcpy
wcpncpy wcrtomb wcscasecmp wcscasecmp_l wcscat wcschr wcschrnul wcscmp wcscoll wcscoll_l wcscpy
wcscspn wcsdup wcsftime wcsftime_l wcslcat wcslcpy wcslen wcsncasecmp wcsncasecmp_l wcsncat
wcsncmp wcsncpy wcsnlen wcsnrtombs wcspbrk wcsrchr wcsrtombs wcsspn wcsstr wcstod wcstod_l
wcstof wcstof128 wcstof128_l wcstof32 wcstof32_l wcstof32x wcstof32x_l wcstof64 wcstof64_l
wcstof64x wcstof64x_l wcstof_l wcstok wcstol wcstol_l wcstold wcstold_l wcstoll wcstoll_l
wcstombs wcstoq wcstoul wcstoul_l wcstoull wcstoull_l wcstouq wcswcs wcswidth wcsxfrm wcsxfrm_l
wctob wctomb wctrans wctrans_l wctrans_t wctype wctype_l wctype_t wcwidth wint_t wmemchr wmemcmp
wmemcpy wmemmove wmempcpy wmemset wprintf wscanf y0 y1 yn
)");
  return kNames.contains(name);
}

}  // namespace structop::model
