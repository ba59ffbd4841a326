/* bcryptprimitives.dll with ProcessPrng only, for Go programs under Wine 8.
 *
 * Go >= 1.22 on Windows gets its random bytes from ProcessPrng in
 * bcryptprimitives.dll, which Wine 8's builtin lacks, so a Go program dies
 * at start. Put this DLL beside the .exe and run wine with
 * WINEDLLOVERRIDES=bcryptprimitives=n,b: it forwards to RtlGenRandom
 * (advapi32's SystemFunction036), which Wine has. Test use only. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG len);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
