#!/bin/sh
# /init of the viz test guest: draw the banner on the framebuffer, say READY on the serial
# console, then keep a live line on screen so a frozen display is visible as such.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
up() { cut -d' ' -f1 /proc/uptime; }
msg() { echo "$*" > /dev/ttyS0; }
msg "VIZGUEST: init at uptime $(up)s"
echo 0 > /sys/class/graphics/fbcon/cursor_blink 2>/dev/null
printf '\033[2J\033[H\033[?25l' > /dev/tty0
FB=/sys/class/graphics/fb0
BPP=$(cat $FB/bits_per_pixel 2>/dev/null)
if [ "$(cat $FB/virtual_size 2>/dev/null)" = "1024,768" ] && [ -f "/etc/banner-$BPP.raw" ] && \
   [ "$(cat $FB/stride 2>/dev/null)" = $((1024 * BPP / 8)) ]; then
  cat "/etc/banner-$BPP.raw" > /dev/fb0
  msg "VIZGUEST: banner on /dev/fb0 at uptime $(up)s"
else
  printf '\n\n   SLURM-VGPU VIZ GUEST (text console)\n' > /dev/tty0
  msg "VIZGUEST: no 1024x768 framebuffer, text banner at uptime $(up)s"
fi
msg "VIZGUEST READY"
i=0
while true; do
  printf '\033[1;1H uptime %ss  tick %d   ' "$(up)" "$i" > /dev/tty0
  [ $((i % 10)) -eq 0 ] && msg "VIZGUEST tick $i uptime $(up)s"
  i=$((i + 1))
  sleep 1
done
